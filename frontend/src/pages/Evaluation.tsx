// Offline evaluations: start one (quick or full), watch it run, then read its Pareto plot,
// metrics table and per-domain breakdown. Every number is from the evaluation's report.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { useSearchParams } from "react-router";
import { CartesianGrid, ResponsiveContainer, Scatter, ScatterChart, Tooltip, XAxis, YAxis, ZAxis } from "recharts";

import { api, mayHeal, withFirst, type Page } from "../api/client";
import type { Evaluation, EvaluationDetail, EvaluationOptions } from "../api/types";
import { ACTIVE, SeedField } from "../components/JobForm";
import { Empty, ErrorText, Loading } from "../components/States";
import { pct, when } from "../lib/format";
import {
  accuracyDomain,
  formatKnob,
  LEARNED,
  logDomain,
  logTicks,
  metricsRows,
  paretoSeries,
  perDomain,
  singlePairPoints,
  usdPerQuery,
  type EvaluationReport,
  type ParetoPoint,
} from "../lib/pareto";
import "./Evaluation.css";

const PALETTE: Record<string, string> = {
  learned: "#3559d6",
  random: "#a0aec0",
  cheapest: "#2f855a",
  best_single: "#c05621",
  oracle: "#6b46c1",
  cascade: "#d69e2e",
  knn: "#319795",
  mf: "#c53030",
  always_decompose: "#718096",
  self_consistency: "#b83280",
};
const colour = (method: string) => PALETTE[method] ?? "#4a5568";
const fixed = (value: number | null, digits = 3) => (value === null ? "–" : value.toFixed(digits));

function presetOf(evaluation: Evaluation): string {
  const preset = evaluation.config?.preset;
  return typeof preset === "string" ? preset : "command line";
}

export default function EvaluationPage() {
  const [params, setParams] = useSearchParams();
  const list = useQuery({
    queryKey: ["evaluations"],
    queryFn: () => api<Page<Evaluation>>("/api/evaluations?limit=50"),
    // Look again while one runs, and after a failed look that may heal (a busy server).
    refetchInterval: (q) => (q.state.data?.items.some((e) => ACTIVE.has(e.status)) || mayHeal(q.state.error) ? 2000 : false),
  });
  const chosenId = Number(params.get("id")) || list.data?.items[0]?.id || null;
  const select = (id: number) => setParams({ id: String(id) });

  return (
    <div className="evaluation-page stack">
      <div className="row">
        <h1>Evaluation</h1>
        <span className="spacer" />
        {list.data && list.data.items.length > 0 && (
          <label className="inline">
            Evaluation&nbsp;
            <select value={chosenId ?? ""} onChange={(e) => select(Number(e.target.value))}>
              {list.data.items.map((e) => (
                <option key={e.id} value={e.id}>
                  #{e.id} · {presetOf(e)} · {e.status} · {when(e.created_at)}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      <StartForm onStarted={select} />
      {list.isPending && <Loading what="Loading evaluations" />}
      {list.isError && <ErrorText error={list.error} />}
      {list.data && list.data.items.length === 0 && (
        <Empty title="No evaluation yet">
          <p>
            An evaluation fits the learned policy and every baseline on recorded outcomes, then scores them on the same
            held-out items. Start a quick one above (a subset of LLMRouter, under a minute) or a full one (several
            minutes).
          </p>
        </Empty>
      )}
      {chosenId !== null && <EvaluationView id={chosenId} />}
    </div>
  );
}

function StartForm({ onStarted }: { onStarted: (id: number) => void }) {
  const client = useQueryClient();
  const options = useQuery({ queryKey: ["evaluation-options"], queryFn: () => api<EvaluationOptions>("/api/evaluations/options") });
  const [preset, setPreset] = useState<"quick" | "full">("quick");
  const [outcome, setOutcome] = useState("");
  const [seed, setSeed] = useState(0);
  const start = useMutation({
    mutationFn: () =>
      api<Evaluation>("/api/evaluations", { method: "POST", body: { preset, seed, outcomes: outcome ? [outcome] : [] } }),
    onSuccess: (created) => {
      // The list shows the new evaluation at once (and so keeps looking while it runs).
      client.setQueryData<Page<Evaluation>>(["evaluations"], (page) => withFirst(page, created));
      client.invalidateQueries({ queryKey: ["evaluations"] });
      onStarted(created.id);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate();
  };
  const quick = options.data?.presets.quick;
  const defaults = options.data ? `${options.data.default_outcomes.join(", ")} (default)` : "Loading…";
  return (
    <form className="panel stack" onSubmit={submit} aria-label="Start an evaluation">
      <div className="row eval-form">
        <label>
          Size
          <select value={preset} onChange={(e) => setPreset(e.target.value as "quick" | "full")}>
            <option value="quick">Quick</option>
            <option value="full">Full</option>
          </select>
        </label>
        <label>
          Outcomes
          <select value={outcome} onChange={(e) => setOutcome(e.target.value)}>
            <option value="">{defaults}</option>
            {options.data?.outcomes.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <SeedField seed={seed} setSeed={setSeed} />
        <button type="submit" className="primary" data-testid="start-evaluation" disabled={start.isPending}>
          {start.isPending ? "Starting…" : "Start evaluation"}
        </button>
      </div>
      <p className="muted small">
        {preset === "quick"
          ? quick
            ? `Quick: a seeded ${String(quick.max_train_items)} train and ${String(quick.max_test_items)} test items, and a small learned policy (SFT only) at ${
                Array.isArray((quick.learned as { knobs?: unknown[] } | null)?.knobs) ? (quick.learned as { knobs: unknown[] }).knobs.length : "a few"
              } values of λ; every baseline.`
            : "Quick: a subset of the items and a small learned policy."
          : "Full: every item, and the learned policy at its default sizes (SFT and RL, 34 values of λ); takes minutes."}
      </p>
      <ErrorText error={start.error} />
    </form>
  );
}

function EvaluationView({ id }: { id: number }) {
  const detail = useQuery({
    queryKey: ["evaluation", id],
    queryFn: () => api<EvaluationDetail>(`/api/evaluations/${id}`),
    refetchInterval: (q) => ((q.state.data && ACTIVE.has(q.state.data.status)) || mayHeal(q.state.error) ? 1500 : false),
  });
  const client = useQueryClient();
  const status = detail.data?.status;
  useEffect(() => {
    // The list's entry shows the status too: refresh it as soon as this one changes.
    if (status) client.invalidateQueries({ queryKey: ["evaluations"] });
  }, [client, status]);
  if (detail.isPending) return <Loading what="Loading the evaluation" />;
  if (detail.isError) return <ErrorText error={detail.error} />;
  const evaluation = detail.data;
  const report = evaluation.report as EvaluationReport;
  return (
    <section className="stack" aria-label={`Evaluation ${evaluation.id}`}>
      <div className="panel row">
        <b>#{evaluation.id}</b>
        <span className={`status ${evaluation.status}`}>{evaluation.status}</span>
        <span className="badge">{presetOf(evaluation)}</span>
        <span className="muted small">started {when(evaluation.started_at ?? evaluation.created_at)}</span>
        {ACTIVE.has(evaluation.status) && (
          <div className="eval-progress">
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
            </span>
          </div>
        )}
      </div>
      {evaluation.status === "failed" && <ErrorText error={new Error(evaluation.message || "The evaluation failed.")} />}
      {evaluation.status === "succeeded" && report.methods && <Results report={report} />}
    </section>
  );
}

function Results({ report }: { report: EvaluationReport }) {
  const anchors = report.anchors;
  return (
    <>
      <p className="muted small">
        {report.items} test items, {report.train_items} train items
        {report.probe_items ? `, ${report.probe_items} probe items` : ""}; {report.split}; {report.models?.length ?? 0} models.
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

function PointTip({ active, payload }: { active?: boolean; payload?: { payload: ParetoPoint }[] }) {
  if (!active || !payload?.length) return null;
  const p = payload[0].payload;
  return (
    <div className="pareto-tip">
      <b>{p.method}</b>
      {p.knob !== null && (
        <span>
          {" "}
          {formatKnob(p.method, p.knob)}
        </span>
      )}
      <div>
        {pct(p.accuracy)} at {usdPerQuery(p.cost)}/query
      </div>
    </div>
  );
}

function ParetoPlot({ report }: { report: EvaluationReport }) {
  const series = paretoSeries(report);
  const singles = singlePairPoints(report);
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [showSingles, setShowSingles] = useState(true);
  const visible = series.filter((s) => !hidden.has(s.method));
  const shown = [...visible.flatMap((s) => s.points), ...(showSingles ? singles : [])];
  const xDomain = logDomain(shown.map((p) => p.cost));
  const yDomain = accuracyDomain(shown.map((p) => p.accuracy));
  const offPlot = series.filter((s) => s.hidden > 0);
  const toggle = (method: string) =>
    setHidden((now) => {
      const next = new Set(now);
      if (next.has(method)) next.delete(method);
      else next.add(method);
      return next;
    });
  return (
    <section className="panel" data-testid="pareto-plot" aria-label="Pareto plot">
      <h2>Accuracy against cost</h2>
      <p className="muted small">
        Macro pass@1 against $/query (log scale). The learned policy is drawn at each λ it was evaluated at; a baseline
        with a knob is drawn at each of its values. Grey dots: always calling one model.
      </p>
      <div className="pareto-chart">
        {xDomain === null ? (
          <p className="muted">No point has a cost above $0, so there is nothing to place on a log axis.</p>
        ) : (
          <ResponsiveContainer width="100%" height="100%">
            <ScatterChart margin={{ top: 10, right: 16, bottom: 24, left: 8 }}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis
                type="number"
                dataKey="cost"
                scale="log"
                domain={xDomain}
                ticks={logTicks(xDomain)}
                allowDataOverflow
                tickFormatter={(v: number) => usdPerQuery(v)}
                label={{ value: "$ / query (log)", position: "insideBottom", offset: -14 }}
              />
              <YAxis
                type="number"
                dataKey="accuracy"
                domain={yDomain}
                tickFormatter={(v: number) => pct(v, 0)}
                label={{ value: "macro pass@1", angle: -90, position: "insideLeft", offset: 10 }}
                width={64}
              />
              <ZAxis range={[36, 36]} />
              <Tooltip content={<PointTip />} />
              {showSingles && <Scatter name="single pairs" data={singles} fill="#b8c0cc" className="pareto-singles" isAnimationActive={false} />}
              {visible.map((s) => (
                <Scatter
                  key={s.method}
                  name={s.method}
                  data={s.points}
                  fill={colour(s.method)}
                  line={s.line ? { stroke: colour(s.method), strokeWidth: s.method === LEARNED ? 3 : 1.5 } : false}
                  shape={s.method === LEARNED ? "circle" : "diamond"}
                  className={`pareto-series-${s.method}`}
                  isAnimationActive={false}
                />
              ))}
            </ScatterChart>
          </ResponsiveContainer>
        )}
      </div>
      <ul className="pareto-legend" aria-label="Methods on the plot (press to show or hide)">
        {series.map((s) => (
          <li key={s.method} data-testid="pareto-series" data-method={s.method} data-points={s.points.length}>
            <button type="button" aria-pressed={!hidden.has(s.method)} onClick={() => toggle(s.method)}>
              <span className="swatch" style={{ background: colour(s.method) }} aria-hidden />
              {s.method}
              <span className="muted small">
                {" "}
                {s.points.length} {s.points.length === 1 ? "point" : "points"}
              </span>
            </button>
          </li>
        ))}
        {singles.length > 0 && (
          <li>
            <button type="button" aria-pressed={showSingles} onClick={() => setShowSingles((v) => !v)}>
              <span className="swatch" style={{ background: "#b8c0cc" }} aria-hidden />
              single models <span className="muted small">{singles.length}</span>
            </button>
          </li>
        )}
      </ul>
      {offPlot.length > 0 && (
        <p className="muted small">
          Not on the log axis (cost $0): {offPlot.map((s) => `${s.method} (${s.hidden})`).join(", ")}.
        </p>
      )}
    </section>
  );
}

function MetricsTable({ report }: { report: EvaluationReport }) {
  const rows = metricsRows(report);
  return (
    <section className="panel" aria-label="Metrics">
      <h2>Metrics</h2>
      <p className="muted small">
        A method with a knob shows its most accurate point; AIQ, APGR and CPT use all its points (docs/evaluation.md).
      </p>
      <div className="table-wrap">
        <table data-testid="metrics-table">
          <thead>
            <tr>
              <th scope="col">Method</th>
              <th scope="col">Macro pass@1</th>
              <th scope="col">$/query</th>
              <th scope="col">AIQ</th>
              <th scope="col">APGR</th>
              <th scope="col">CPT 50%</th>
              <th scope="col">CPT 80%</th>
              <th scope="col">Calls/query</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.method} data-method={r.method} className={r.notApplicable ? "not-applicable" : undefined}>
                <th scope="row">
                  {r.method}
                  {r.method === "oracle" && <span className="muted small"> (upper bound)</span>}
                  {r.bestKnob !== null && (
                    <span className="muted small">
                      {" "}
                      best @ {formatKnob(r.method, r.bestKnob)}
                    </span>
                  )}
                </th>
                {r.notApplicable !== null ? (
                  <td colSpan={7} className="muted">
                    does not apply: {r.notApplicable}
                  </td>
                ) : (
                  <>
                    <td>{fixed(r.macroAcc)}</td>
                    <td>{usdPerQuery(r.costPerQuery)}</td>
                    <td>{fixed(r.aiq)}</td>
                    <td>{fixed(r.apgr)}</td>
                    <td>{r.cpt50 === null ? "never" : pct(r.cpt50)}</td>
                    <td>{r.cpt80 === null ? "never" : pct(r.cpt80)}</td>
                    <td>{fixed(r.callsPerQuery, 2)}</td>
                  </>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function PerDomainTable({ report }: { report: EvaluationReport }) {
  const { domains, rows } = perDomain(report);
  return (
    <section className="panel" aria-label="Per-domain accuracy">
      <h2>Per domain</h2>
      <p className="muted small">pass@1 in each domain at each method's most accurate point.</p>
      {domains.length === 0 ? (
        <p className="muted">The report has no per-domain accuracy.</p>
      ) : (
        <div className="table-wrap">
          <table data-testid="per-domain">
            <thead>
              <tr>
                <th scope="col">Method</th>
                {domains.map((d) => (
                  <th scope="col" key={d}>
                    {d}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.method} data-method={r.method}>
                  <th scope="row">{r.method}</th>
                  {r.values.map((v, k) => (
                    <td key={domains[k]}>{fixed(v)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
