// One evaluation: its status and progress (streamed while it runs), then its Pareto plot,
// metrics table and per-domain breakdown.
import { useQuery } from "@tanstack/react-query";
import { useCallback, useState } from "react";

import { api, mayHeal } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Evaluation, EvaluationDetail } from "../../api/types";
import { ACTIVE } from "../../components/JobForm";
import { ErrorText, Loading } from "../../components/States";
import { pct, when } from "../../lib/format";
import { usdPerQuery, type EvaluationReport } from "../../lib/pareto";
import { CompositeResults, isCompositeReport } from "./CompositeResults";
import { ParetoPlot } from "./ParetoPlot";
import { fixed, MetricsTable, PerDomainTable } from "./Tables";
import { useEvaluationStream } from "./useEvaluationStream";

/** How often the evaluation is read while it runs and its socket is lost. */
const POLL_MS = 1500;

export function presetOf(evaluation: Evaluation): string {
  const preset = evaluation.config?.preset;
  const kind = evaluation.config?.kind === "composites" ? "composites · " : "";
  return typeof preset === "string" ? `${kind}${preset}` : "command line";
}

export function EvaluationView({ id }: { id: number }) {
  const [lost, setLost] = useState(false);
  const detail = useQuery({
    queryKey: keys.evaluations.detail(id),
    queryFn: () => api<EvaluationDetail>(`/api/evaluations/${id}`),
    // Its socket carries the progress; look again only without it, or after a failed look that may heal.
    refetchInterval: (q) =>
      (lost && q.state.data && ACTIVE.has(q.state.data.status)) || mayHeal(q.state.error) ? POLL_MS : false,
  });
  const active = detail.data !== undefined && ACTIVE.has(detail.data.status);
  useEvaluationStream(
    id,
    active,
    useCallback(() => setLost(true), []),
  );
  if (detail.isPending) return <Loading what="Loading the evaluation" />;
  if (detail.isError) return <ErrorText error={detail.error} />;
  const evaluation = detail.data;
  const report = evaluation.report as EvaluationReport;
  return (
    <section className="stack" aria-label={`Evaluation ${evaluation.id}`}>
      <div className="panel row">
        <b>#{evaluation.id}</b>
        <span className={`status ${evaluation.status}`} data-testid="evaluation-status" data-status={evaluation.status}>
          {evaluation.status}
        </span>
        <span className="badge">{presetOf(evaluation)}</span>
        <span className="muted small">started {when(evaluation.started_at ?? evaluation.created_at)}</span>
        {active && <Progress evaluation={evaluation} streamed={!lost} />}
      </div>
      {evaluation.status === "failed" && (
        <ErrorText error={new Error(evaluation.message || "The evaluation failed.")} />
      )}
      {evaluation.status === "succeeded" && isCompositeReport(evaluation.report) && (
        <CompositeResults report={evaluation.report} />
      )}
      {evaluation.status === "succeeded" && !isCompositeReport(evaluation.report) && report.methods && (
        <Results report={report} />
      )}
    </section>
  );
}

function Progress({ evaluation, streamed }: { evaluation: EvaluationDetail; streamed: boolean }) {
  return (
    <div className="eval-progress" data-testid="evaluation-progress" data-streamed={streamed}>
      <div
        className="progress"
        role="progressbar"
        aria-label="Evaluation progress"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(evaluation.progress * 100)}
      >
        <span style={{ width: `${evaluation.progress * 100}%` }} />
      </div>
      <span className="small">
        {pct(evaluation.progress, 0)} · {evaluation.message || "waiting for a worker on queue training"}
        {!streamed && " (live updates are unavailable; looking again every 1.5 s)"}
      </span>
    </div>
  );
}

function Results({ report }: { report: EvaluationReport }) {
  const anchors = report.anchors;
  return (
    <>
      <p className="muted small">
        {report.items} test items, {report.train_items} train items
        {report.probe_items ? `, ${report.probe_items} probe items` : ""}; {report.split}; {report.models?.length ?? 0}{" "}
        models.
        {anchors?.weak && anchors.strong && (
          <>
            {" "}
            Anchors: weak {anchors.weak[0]} ({fixed(anchors.weak[2])} at {usdPerQuery(anchors.weak[1])}), strong{" "}
            {anchors.strong[0]} ({fixed(anchors.strong[2])} at {usdPerQuery(anchors.strong[1])}).
          </>
        )}
      </p>
      <ParetoPlot report={report} />
      <MetricsTable report={report} />
      <PerDomainTable report={report} />
    </>
  );
}
