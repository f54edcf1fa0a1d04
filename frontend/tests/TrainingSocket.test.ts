import { describe, expect, it } from "vitest";

import { jobConfig, lineageSummary } from "../src/pages/training/config";
import {
  curveKeys,
  extendHistory,
  metricSummary,
  type CurvePoint,
  type TrainingProgress,
} from "../src/lib/trainingSocket";

const message = (progress: number, metrics: Record<string, unknown>): TrainingProgress => ({
  kind: "progress",
  id: 1,
  status: "running",
  progress,
  metrics,
  message: "sft",
});

describe("extendHistory", () => {
  const history: CurvePoint[] = [{ progress: 0.4, stage: "sft", "loss/sft": 1.2 }];

  it("adds a point when the job moves forward with metrics", () => {
    const next = extendHistory(history, message(0.5, { "loss/sft": 0.9, note: "x" }));
    expect(next).toHaveLength(2);
    expect(next[1]).toEqual({ progress: 0.5, stage: "sft", "loss/sft": 0.9 });
  });

  it("ignores a message that does not move forward or has no metric", () => {
    expect(extendHistory(history, message(0.4, { "loss/sft": 0.1 }))).toBe(history);
    expect(extendHistory(history, message(0.6, {}))).toBe(history);
  });
});

describe("curveKeys", () => {
  it("splits losses from accuracies and drops timings and counts", () => {
    const keys = curveKeys([{ progress: 0.1, "loss/bt": 0.6, "fit/accuracy": 0.7, "time/fit_s": 3, "data/pairs": 9 }]);
    expect(keys).toEqual({ loss: ["loss/bt"], other: ["fit/accuracy"] });
  });
});

describe("metricSummary", () => {
  it("puts accuracies first and shows counts as whole numbers", () => {
    const metrics = {
      "train/pairs": 517,
      "train/margin": 3.5612,
      "train/accuracy": 0.7719,
      "train/reward_std": 4.06,
      "train/accuracy/node_level": 1,
      "cost/beta": 1.2,
      "fit/accuracy": 0.91,
      note: "x",
    };
    expect(metricSummary(metrics)).toEqual([
      ["train/accuracy", "0.772"],
      ["train/accuracy/node_level", "1.000"],
      ["train/margin", "3.561"],
      ["train/reward_std", "4.060"],
      ["train/pairs", "517"],
    ]);
  });
});

describe("jobConfig", () => {
  it("a quick job trains small on Reflexion; a full one sends only the seed and ticked files", () => {
    expect(jobConfig("policy", "quick", 2, [])).toMatchObject({
      seed: 2,
      outcomes: ["reflexion.jsonl.gz"],
      learned: {},
    });
    expect(jobConfig("reward_model", "full", 0, [])).toEqual({ seed: 0 });
    expect(jobConfig("reward_model", "full", 0, ["bbh.jsonl.gz"])).toEqual({ seed: 0, outcomes: ["bbh.jsonl.gz"] });
  });
  it("a policy for unseen pools says so; a reward model never does", () => {
    expect(jobConfig("policy", "full", 1, [], true)).toEqual({ seed: 1, unseen: true });
    expect(jobConfig("policy", "full", 1, [])).toEqual({ seed: 1 });
    expect(jobConfig("reward_model", "full", 0, [], true)).toEqual({ seed: 0 });
    expect(jobConfig("policy", "full", 1, [], false, 7)).toEqual({ seed: 1, guide: 7 });
    expect(jobConfig("reward_model", "full", 0, [], false, 7)).toEqual({ seed: 0 });
  });
  it("names the collections it also trains on, for either kind", () => {
    expect(jobConfig("policy", "full", 0, [], false, null, [3, 5])).toEqual({ seed: 0, collections: [3, 5] });
    expect(jobConfig("reward_model", "full", 0, [], false, null, [3])).toEqual({ seed: 0, collections: [3] });
    expect(jobConfig("policy", "full", 0, [], false, null, [])).toEqual({ seed: 0 });
  });
});

describe("lineageSummary", () => {
  it("names the data a checkpoint came from, and the default it replaced", () => {
    expect(lineageSummary({ outcomes: ["routerbench.jsonl.gz"], seed: 0, live_runs: 0, replaces: "policy-1" })).toBe(
      "routerbench.jsonl.gz · seed 0 · 0 live runs · replaced policy-1 as the default",
    );
    expect(lineageSummary({})).toBe("–");
    expect(lineageSummary({ seed: 3, unseen: true })).toBe("seed 3 · for unseen pools");
    expect(lineageSummary({ seed: 1, guide: 4 })).toBe("seed 1 · guided by reward model 4");
    expect(lineageSummary({ outcomes: ["a.jsonl.gz"], collections: [3, 5], seed: 0 })).toBe(
      "a.jsonl.gz · collections #3, #5 · seed 0",
    );
  });
});
