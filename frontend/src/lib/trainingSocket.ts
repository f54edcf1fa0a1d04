// A training job's live progress (/ws/training/<id>/) and its metric curves.
import type { TrainingProgress } from "../api/events";
import { watchJob } from "./jobSocket";

export type { TrainingProgress };

/** One point of a job's history: where it was, the stage, and the metrics then. */
export type CurvePoint = { progress: number; stage?: string } & Record<string, unknown>;

/** Watch a training job (lib/jobSocket); returns a function that stops watching. */
export function watchTrainingJob(
  id: number,
  onProgress: (message: TrainingProgress) => void,
  onLost: (code: number) => void,
): () => void {
  return watchJob<TrainingProgress>(`/ws/training/${id}/`, onProgress, onLost);
}

const numeric = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);

/**
 * The history extended by a live message: a point is added when the message moves the job
 * forward and carries at least one metric; otherwise the history is returned unchanged.
 */
export function extendHistory(history: CurvePoint[], message: TrainingProgress): CurvePoint[] {
  const last = history[history.length - 1];
  if (last && message.progress <= last.progress) return history;
  const metrics = Object.fromEntries(Object.entries(message.metrics ?? {}).filter(([, v]) => numeric(v)));
  if (Object.keys(metrics).length === 0) return history;
  return [...history, { progress: Math.round(message.progress * 10000) / 10000, stage: message.message, ...metrics }];
}

/** The metrics worth a curve: losses, accuracies and rewards (not timings or counts). */
export function curveKeys(history: CurvePoint[]): { loss: string[]; other: string[] } {
  const keys = new Set<string>();
  for (const point of history) {
    for (const [key, value] of Object.entries(point)) {
      if (key === "progress" || key === "stage" || !numeric(value)) continue;
      if (/^(time|data)\//.test(key)) continue;
      if (/loss|acc|reward|auc/i.test(key)) keys.add(key);
    }
  }
  const sorted = [...keys].sort();
  return { loss: sorted.filter((k) => /loss/i.test(k)), other: sorted.filter((k) => !/loss/i.test(k)) };
}

// Accuracies first, then margins and rewards, then the rest (counts), where a whole number reads as one.
const SUMMARY_ORDER = [/accuracy/, /margin|reward/, /./];

/** A checkpoint's headline metrics, at most six, formatted. */
export function metricSummary(metrics: Record<string, unknown>): [string, string][] {
  const rank = (key: string) => SUMMARY_ORDER.findIndex((pattern) => pattern.test(key));
  return Object.entries(metrics)
    .filter(
      (entry): entry is [string, number] => typeof entry[1] === "number" && /^(eval|valid|train)\//.test(entry[0]),
    )
    .sort(([a], [b]) => rank(a) - rank(b) || a.length - b.length || a.localeCompare(b))
    .slice(0, 6)
    .map(([key, value]) => [key, Number.isInteger(value) && rank(key) === 2 ? String(value) : value.toFixed(3)]);
}
