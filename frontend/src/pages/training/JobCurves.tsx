// A job's curves: its stored history, extended by the progress messages received since.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo } from "react";
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";

import { api, mayHeal } from "../../api/client";
import type { TrainingProgress } from "../../api/events";
import { keys } from "../../api/queryKeys";
import type { TrainingJobDetail } from "../../api/types";
import { ACTIVE } from "../../components/JobForm";
import { ErrorText, Loading } from "../../components/States";
import { pct } from "../../lib/format";
import { curveKeys, extendHistory, type CurvePoint } from "../../lib/trainingSocket";
import { KIND_LABEL } from "./config";

const LINE_COLOURS = ["#3559d6", "#c53030", "#2f855a", "#d69e2e", "#6b46c1", "#319795", "#b83280", "#718096"];
const NO_HISTORY: CurvePoint[] = [];

interface Props {
  id: number;
  /** The progress messages received for this job, in order. */
  messages: TrainingProgress[];
  /** The job's status as the list or the socket last said. */
  status?: string;
}

export function JobCurves({ id, messages, status }: Props) {
  const detail = useQuery({
    queryKey: keys.training.job(id),
    queryFn: () => api<TrainingJobDetail>(`/api/training/jobs/${id}`),
    refetchInterval: (q) =>
      (q.state.data && ACTIVE.has(q.state.data.status) && messages.length === 0) || mayHeal(q.state.error)
        ? 3000
        : false,
  });
  const { refetch } = detail;
  const stale = status !== undefined && detail.data !== undefined && status !== detail.data.status;
  useEffect(() => {
    if (stale) void refetch(); // the job moved on (the list or the socket says so): reload its history
  }, [stale, status, refetch]);
  // A message adds a point only when it moves past the history's last, so a refetched
  // history (which holds the earlier messages' points) takes them in once.
  const base = (detail.data?.history as CurvePoint[] | undefined) ?? NO_HISTORY;
  const history = useMemo(() => messages.reduce(extendHistory, base), [base, messages]);
  const lines = curveKeys(history);
  if (detail.isPending) return <Loading what="Loading the job's curves" />;
  if (detail.isError) return <ErrorText error={detail.error} />;
  const job = detail.data;
  const all = [...lines.loss, ...lines.other];
  return (
    <section className="panel" aria-label={`Curves of job ${job.id}`}>
      <h2>
        Job #{job.id}: {KIND_LABEL[job.kind] ?? job.kind} <span className={`status ${job.status}`}>{job.status}</span>
      </h2>
      {job.status === "failed" && <ErrorText error={new Error(job.message || "The job failed.")} />}
      <div className="training-curve" data-testid="training-curve" data-points={history.length}>
        {all.length === 0 ? (
          <p className="muted">
            {ACTIVE.has(job.status)
              ? "No metrics yet: the curves appear once training reports its first epoch."
              : "This job recorded no metric history."}
          </p>
        ) : (
          <ResponsiveContainer width="100%" height="100%">
            <LineChart data={history} margin={{ top: 8, right: 8, bottom: 20, left: 0 }}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis
                type="number"
                dataKey="progress"
                domain={[0, 1]}
                tickFormatter={(v: number) => pct(v, 0)}
                label={{ value: "progress", position: "insideBottom", offset: -10 }}
              />
              {lines.loss.length > 0 && <YAxis yAxisId="loss" width={52} domain={["auto", "auto"]} />}
              {lines.other.length > 0 && (
                <YAxis yAxisId="other" orientation="right" width={44} domain={["auto", "auto"]} />
              )}
              <Tooltip
                labelFormatter={(v) => `progress ${pct(Number(v), 1)}`}
                formatter={(v) => (typeof v === "number" ? v.toFixed(4) : String(v))}
              />
              <Legend verticalAlign="top" />
              {all.map((key, k) => (
                <Line
                  key={key}
                  yAxisId={lines.loss.includes(key) ? "loss" : "other"}
                  dataKey={key}
                  stroke={LINE_COLOURS[k % LINE_COLOURS.length]}
                  dot={history.length < 40}
                  connectNulls
                  isAnimationActive={false}
                />
              ))}
            </LineChart>
          </ResponsiveContainer>
        )}
      </div>
      {all.length > 0 && <p className="muted small">Losses on the left axis; accuracies and rewards on the right.</p>}
    </section>
  );
}
