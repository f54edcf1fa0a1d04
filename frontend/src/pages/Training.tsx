// Training: start a policy or reward-model job, follow every job's progress live, read the
// selected job's curves, and promote a checkpoint to the default of its kind.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { useSearchParams } from "react-router";
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";

import { api, mayHeal, withFirst, type Page } from "../api/client";
import type { Checkpoint, EvaluationOptions, TrainingJob, TrainingJobDetail } from "../api/types";
import { ACTIVE, SeedField } from "../components/JobForm";
import { Empty, ErrorText, Loading } from "../components/States";
import { pct, when } from "../lib/format";
import { curveKeys, extendHistory, metricSummary, watchTrainingJob, type CurvePoint, type TrainingProgress } from "../lib/trainingSocket";
import "./Training.css";

type Kind = "policy" | "reward_model";
type Size = "quick" | "full";
const KIND_LABEL: Record<string, string> = { policy: "Policy", reward_model: "Reward model" };

// "quick": Reflexion's 601 items and small trainer sizes: a policy in about 8 s, a reward
// model in about 10 s on 2 cores once the embedding cache holds its prompts (the first time,
// about 25 s more; docs/evaluation.md). "full": the trainers' defaults.
export const QUICK_CONFIG: Record<Kind, Record<string, unknown>> = {
  policy: { learned: { sft: { reliability_epochs: 8, epochs: 8 }, rl: { iterations: 20, tasks_per_iteration: 32 } } },
  reward_model: { rm: { train: { epochs: 40, batch_size: 16 } } },
};
export const QUICK_OUTCOMES = ["reflexion.jsonl.gz"];

export function jobConfig(kind: Kind, size: Size, seed: number, outcomes: string[]): Record<string, unknown> {
  const chosen = outcomes.length > 0 ? outcomes : size === "quick" ? QUICK_OUTCOMES : [];
  return { seed, ...(chosen.length > 0 ? { outcomes: chosen } : {}), ...(size === "quick" ? QUICK_CONFIG[kind] : {}) };
}

export default function TrainingPage() {
  const [params, setParams] = useSearchParams();
  const client = useQueryClient();
  const [live, setLive] = useState<Record<number, TrainingProgress>>({});
  const [socketsLost, setSocketsLost] = useState(false);
  const jobs = useQuery({
    queryKey: ["training-jobs"],
    queryFn: () => api<Page<TrainingJob>>("/api/training/jobs?limit=50"),
    // Sockets carry progress; the list is polled too, slower while they work, to catch new and ended jobs.
    refetchInterval: (q) =>
      q.state.data?.items.some((j) => ACTIVE.has(j.status)) || mayHeal(q.state.error) ? (socketsLost ? 2000 : 5000) : false,
  });
  const activeIds = (jobs.data?.items ?? []).filter((j) => ACTIVE.has(j.status)).map((j) => j.id);
  const activeKey = activeIds.join(",");
  // However a job's end is seen (its socket, or the list's polling), its checkpoint is new.
  const endedKey = (jobs.data?.items ?? []).filter((j) => !ACTIVE.has(j.status)).map((j) => j.id).join(",");
  useEffect(() => {
    client.invalidateQueries({ queryKey: ["checkpoints"] });
  }, [endedKey, client]);

  useEffect(() => {
    if (!activeKey) return;
    const stops = activeKey.split(",").map((id) =>
      watchTrainingJob(
        Number(id),
        (message) => {
          setLive((now) => ({ ...now, [message.id]: message }));
          if (!ACTIVE.has(message.status)) {
            client.invalidateQueries({ queryKey: ["training-jobs"] });
            client.invalidateQueries({ queryKey: ["checkpoints"] });
          }
        },
        () => setSocketsLost(true),
      ),
    );
    return () => stops.forEach((stop) => stop());
  }, [activeKey, client]);

  const list = (jobs.data?.items ?? []).map((job) => {
    const message = live[job.id];
    return message && message.progress >= job.progress
      ? { ...job, status: message.status, progress: message.progress, message: message.message }
      : job;
  });
  const selectedId = Number(params.get("job")) || list[0]?.id || null;

  return (
    <div className="training-page stack">
      <h1>Training</h1>
      <StartForm onStarted={(id) => setParams({ job: String(id) })} />
      <section className="panel" aria-label="Training jobs">
        <h2>Jobs</h2>
        {socketsLost && activeIds.length > 0 && (
          <p className="muted small">Live updates are unavailable; the list refreshes every 2 seconds instead.</p>
        )}
        {jobs.isPending && <Loading what="Loading training jobs" />}
        {jobs.isError && <ErrorText error={jobs.error} />}
        {jobs.data && list.length === 0 && (
          <Empty title="No training job yet">
            <p>Start one above: a quick job finishes in well under a minute.</p>
          </Empty>
        )}
        {list.length > 0 && (
          <JobTable jobs={list} selectedId={selectedId} onSelect={(id) => setParams({ job: String(id) })} />
        )}
      </section>
      {selectedId !== null && (
        <JobCurves id={selectedId} live={live[selectedId]} status={list.find((j) => j.id === selectedId)?.status} />
      )}
      <Checkpoints />
    </div>
  );
}

function StartForm({ onStarted }: { onStarted: (id: number) => void }) {
  const client = useQueryClient();
  const options = useQuery({ queryKey: ["evaluation-options"], queryFn: () => api<EvaluationOptions>("/api/evaluations/options") });
  const [kind, setKind] = useState<Kind>("policy");
  const [size, setSize] = useState<Size>("quick");
  const [seed, setSeed] = useState(0);
  const [outcomes, setOutcomes] = useState<string[]>([]);
  const start = useMutation({
    mutationFn: () =>
      api<TrainingJob>("/api/training/jobs", { method: "POST", body: { kind, config: jobConfig(kind, size, seed, outcomes) } }),
    onSuccess: (job) => {
      // The list shows the new job at once (and so keeps looking while it runs).
      client.setQueryData<Page<TrainingJob>>(["training-jobs"], (page) => withFirst(page, job));
      client.invalidateQueries({ queryKey: ["training-jobs"] });
      onStarted(job.id);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate();
  };
  const toggle = (name: string) => setOutcomes((now) => (now.includes(name) ? now.filter((n) => n !== name) : [...now, name]));
  const fullDefault = kind === "policy" ? "every shipped file" : "routerbench and llmrouter";
  return (
    <form className="panel stack" onSubmit={submit} aria-label="Start a training job">
      <div className="row train-form">
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
            <option value="policy">Policy</option>
            <option value="reward_model">Reward model</option>
          </select>
        </label>
        <label>
          Size
          <select value={size} onChange={(e) => setSize(e.target.value as Size)}>
            <option value="quick">Quick</option>
            <option value="full">Full</option>
          </select>
        </label>
        <SeedField seed={seed} setSeed={setSeed} />
        <button type="submit" className="primary" data-testid="start-training" disabled={start.isPending}>
          {start.isPending ? "Starting…" : "Start training"}
        </button>
      </div>
      <fieldset className="outcomes">
        <legend>
          Outcome files <span className="muted small">(none ticked: {size === "quick" ? QUICK_OUTCOMES.join(", ") : fullDefault})</span>
        </legend>
        {options.isPending && <Loading what="Loading the outcome files" />}
        {options.isError && <ErrorText error={options.error} />}
        {options.data?.outcomes.map((name) => (
          <label key={name} className="inline">
            <input type="checkbox" checked={outcomes.includes(name)} onChange={() => toggle(name)} /> {name}
          </label>
        ))}
      </fieldset>
      <p className="muted small">
        {size === "quick"
          ? kind === "policy"
            ? "Quick: 8 epochs of each SFT stage and 20 RL updates, on Reflexion's 601 items unless you tick files."
            : "Quick: 40 epochs in batches of 16 over Reflexion's pairs unless you tick files."
          : "Full: the trainer's default sizes (docs/learning.md); files whose prompts are not embedded yet take minutes more."}
      </p>
      <ErrorText error={start.error} />
    </form>
  );
}

function JobTable({ jobs, selectedId, onSelect }: { jobs: TrainingJob[]; selectedId: number | null; onSelect: (id: number) => void }) {
  return (
    <div className="table-wrap">
      <table className="jobs-table">
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Kind</th>
            <th scope="col">Status</th>
            <th scope="col">Progress</th>
            <th scope="col">Stage / message</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => (
            <tr
              key={job.id}
              data-testid="job-row"
              data-job-id={job.id}
              data-status={job.status}
              className={job.id === selectedId ? "selected" : undefined}
            >
              <th scope="row">
                <button type="button" className="link" aria-pressed={job.id === selectedId} onClick={() => onSelect(job.id)}>
                  #{job.id}
                </button>
              </th>
              <td>{KIND_LABEL[job.kind] ?? job.kind}</td>
              <td>
                <span className={`status ${job.status}`}>{job.status}</span>
              </td>
              <td>
                <div className="job-progress" data-testid="job-progress" data-progress={job.progress}>
                  <div
                    className="progress"
                    role="progressbar"
                    aria-label={`Job ${job.id} progress`}
                    aria-valuemin={0}
                    aria-valuemax={100}
                    aria-valuenow={Math.round(job.progress * 100)}
                  >
                    <span style={{ width: `${job.progress * 100}%` }} />
                  </div>
                  <span className="small">{pct(job.progress, 0)}</span>
                </div>
              </td>
              <td className={job.status === "failed" ? "job-message failed" : "job-message"}>{job.message || "–"}</td>
              <td className="small">{when(job.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const LINE_COLOURS = ["#3559d6", "#c53030", "#2f855a", "#d69e2e", "#6b46c1", "#319795", "#b83280", "#718096"];

function JobCurves({ id, live, status }: { id: number; live?: TrainingProgress; status?: string }) {
  const detail = useQuery({
    queryKey: ["training-job", id],
    queryFn: () => api<TrainingJobDetail>(`/api/training/jobs/${id}`),
    refetchInterval: (q) => ((q.state.data && ACTIVE.has(q.state.data.status) && !live) || mayHeal(q.state.error) ? 3000 : false),
  });
  const { refetch } = detail;
  const stale = status !== undefined && detail.data !== undefined && status !== detail.data.status;
  useEffect(() => {
    if (stale) void refetch(); // the job moved on (the list or the socket says so): reload its history
  }, [stale, status, refetch]);
  const [extended, setExtended] = useState<CurvePoint[]>([]);
  const base = (detail.data?.history ?? []) as CurvePoint[];
  useEffect(() => setExtended([]), [id, detail.data?.history.length]);
  useEffect(() => {
    if (live && live.id === id) setExtended((now) => extendHistory([...base, ...now], live).slice(base.length));
    // base is read at the time of the message; it changes only with a refetch, which resets `extended`
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [live, id]);
  const history = useMemo(() => [...base, ...extended], [base, extended]);
  const keys = curveKeys(history);
  if (detail.isPending) return <Loading what="Loading the job's curves" />;
  if (detail.isError) return <ErrorText error={detail.error} />;
  const job = detail.data;
  const all = [...keys.loss, ...keys.other];
  return (
    <section className="panel" aria-label={`Curves of job ${job.id}`}>
      <h2>
        Job #{job.id}: {KIND_LABEL[job.kind] ?? job.kind} <span className={`status ${job.status}`}>{job.status}</span>
      </h2>
      {job.status === "failed" && <ErrorText error={new Error(job.message || "The job failed.")} />}
      <div className="training-curve" data-testid="training-curve" data-points={history.length}>
        {all.length === 0 ? (
          <p className="muted">
            {ACTIVE.has(job.status) ? "No metrics yet: the curves appear once training reports its first epoch." : "This job recorded no metric history."}
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
              {keys.loss.length > 0 && <YAxis yAxisId="loss" width={52} domain={["auto", "auto"]} />}
              {keys.other.length > 0 && <YAxis yAxisId="other" orientation="right" width={44} domain={["auto", "auto"]} />}
              <Tooltip labelFormatter={(v) => `progress ${pct(Number(v), 1)}`} formatter={(v) => (typeof v === "number" ? v.toFixed(4) : String(v))} />
              <Legend verticalAlign="top" />
              {all.map((key, k) => (
                <Line
                  key={key}
                  yAxisId={keys.loss.includes(key) ? "loss" : "other"}
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

export function lineageSummary(lineage: Record<string, unknown>): string {
  const parts: string[] = [];
  if (Array.isArray(lineage.outcomes)) parts.push(lineage.outcomes.join(", "));
  if (typeof lineage.seed === "number") parts.push(`seed ${lineage.seed}`);
  if (typeof lineage.live_runs === "number") parts.push(`${lineage.live_runs} live runs`);
  if (typeof lineage.pairs === "number") parts.push(`${lineage.pairs} pairs`);
  if (typeof lineage.run_pairs === "number") parts.push(`${lineage.run_pairs} run pairs`);
  if (typeof lineage.replaces === "string") parts.push(`replaced ${lineage.replaces} as the default`);
  return parts.join(" · ") || "–";
}

function Checkpoints() {
  const client = useQueryClient();
  const checkpoints = useQuery({ queryKey: ["checkpoints"], queryFn: () => api<Page<Checkpoint>>("/api/checkpoints?limit=50") });
  const promote = useMutation({
    mutationFn: (id: number) => api<Checkpoint>(`/api/checkpoints/${id}/promote`, { method: "POST" }),
    onSettled: () => client.invalidateQueries({ queryKey: ["checkpoints"] }),
  });
  return (
    <section className="panel" aria-label="Checkpoints">
      <h2>Checkpoints</h2>
      {checkpoints.isPending && <Loading what="Loading checkpoints" />}
      {checkpoints.isError && <ErrorText error={checkpoints.error} />}
      <ErrorText error={promote.error} />
      {checkpoints.data && checkpoints.data.items.length === 0 && (
        <Empty title="No checkpoint yet">
          <p>Every training job that finishes keeps one; the first of each kind becomes the default.</p>
        </Empty>
      )}
      {checkpoints.data && checkpoints.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Metrics</th>
                <th scope="col">Trained on</th>
                <th scope="col">Created</th>
                <th scope="col">Default</th>
              </tr>
            </thead>
            <tbody>
              {checkpoints.data.items.map((c) => (
                <tr key={c.id} data-testid="checkpoint-row" data-checkpoint-id={c.id} data-default={c.is_default}>
                  <th scope="row">{c.name}</th>
                  <td>{KIND_LABEL[c.kind] ?? c.kind}</td>
                  <td className="metrics small">
                    {metricSummary(c.metrics).map(([key, value]) => (
                      <span key={key}>
                        {key} <b>{value}</b>
                      </span>
                    ))}
                  </td>
                  <td className="small">{lineageSummary(c.lineage)}</td>
                  <td className="small">{when(c.created_at)}</td>
                  <td>
                    {c.is_default ? (
                      <span className="status succeeded">default</span>
                    ) : (
                      <button
                        type="button"
                        data-testid="promote"
                        disabled={promote.isPending}
                        onClick={() => promote.mutate(c.id)}
                        aria-label={`Promote ${c.name} to the default ${KIND_LABEL[c.kind] ?? c.kind}`}
                      >
                        Promote to default
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
