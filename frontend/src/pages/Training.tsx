// Training: start a policy or reward-model job, follow every job's progress live, read the
// selected job's curves, and promote a checkpoint to the default of its kind.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useState } from "react";
import { useSearchParams } from "react-router";

import { fetchEvery, mayHeal } from "../api/client";
import type { TrainingProgress } from "../api/events";
import { keys } from "../api/queryKeys";
import type { TrainingJob } from "../api/types";
import { ACTIVE } from "../components/JobForm";
import { JobTable } from "../components/JobTable";
import { Empty, ErrorText, Loading } from "../components/States";
import { watchTrainingJob } from "../lib/trainingSocket";
import { Checkpoints } from "./training/Checkpoints";
import { JobCurves } from "./training/JobCurves";
import { KIND_LABEL } from "./training/config";
import { StartForm } from "./training/StartForm";
import "./Training.css";

const NO_MESSAGES: TrainingProgress[] = [];

/** Every running job's progress messages, from its socket; `onLost` when one closes unasked. */
function useJobStreams(activeKey: string, onLost: () => void): Record<number, TrainingProgress[]> {
  const client = useQueryClient();
  const [messages, setMessages] = useState<Record<number, TrainingProgress[]>>({});
  useEffect(() => {
    if (!activeKey) return;
    const stops = activeKey.split(",").map((id) =>
      watchTrainingJob(
        Number(id),
        (message) => {
          setMessages((now) => ({ ...now, [message.id]: [...(now[message.id] ?? []), message] }));
          if (!ACTIVE.has(message.status)) {
            void client.invalidateQueries({ queryKey: keys.training.jobs });
            void client.invalidateQueries({ queryKey: keys.training.checkpoints });
          }
        },
        onLost,
      ),
    );
    return () => stops.forEach((stop) => stop());
  }, [activeKey, client, onLost]);
  return messages;
}

export default function TrainingPage() {
  const [params, setParams] = useSearchParams();
  const client = useQueryClient();
  const [socketsLost, setSocketsLost] = useState(false);
  const jobs = useQuery({
    queryKey: keys.training.jobs,
    queryFn: ({ signal }) => fetchEvery<TrainingJob>("/api/training/jobs", {}, signal),
    // Sockets carry progress; the list is polled too, slower while they work, to catch new and ended jobs.
    refetchInterval: (q) =>
      q.state.data?.items.some((j) => ACTIVE.has(j.status)) || mayHeal(q.state.error)
        ? socketsLost
          ? 2000
          : 5000
        : false,
  });
  const items = jobs.data?.items;
  const activeIds = (items ?? []).filter((j) => ACTIVE.has(j.status)).map((j) => j.id);
  const streams = useJobStreams(
    activeIds.join(","),
    useCallback(() => setSocketsLost(true), []),
  );
  // However a job's end is seen (its socket, or the list's polling), its checkpoint is new.
  const endedKey = (items ?? [])
    .filter((j) => !ACTIVE.has(j.status))
    .map((j) => j.id)
    .join(",");
  useEffect(() => {
    void client.invalidateQueries({ queryKey: keys.training.checkpoints });
  }, [endedKey, client]);

  const list = (items ?? []).map((job) => {
    const message = streams[job.id]?.at(-1);
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
          <JobTable
            jobs={list}
            label="Training jobs"
            noun="Job"
            columns={[{ header: "Kind", cell: (job) => KIND_LABEL[job.kind] ?? job.kind }]}
            selectedId={selectedId}
            onSelect={(id) => setParams({ job: String(id) })}
          />
        )}
      </section>
      {selectedId !== null && (
        <JobCurves
          id={selectedId}
          messages={streams[selectedId] ?? NO_MESSAGES}
          status={list.find((j) => j.id === selectedId)?.status}
        />
      )}
      <Checkpoints />
    </div>
  );
}
