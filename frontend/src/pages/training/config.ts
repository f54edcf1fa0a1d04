// What a training job is started with: the quick and full sizes of each kind.

export type Kind = "policy" | "reward_model";
export type Size = "quick" | "full";
export const KIND_LABEL: Record<string, string> = { policy: "Policy", reward_model: "Reward model" };

// "quick": Reflexion's 601 items and small trainer sizes: a policy in about 8 s, a reward
// model in about 10 s on 2 cores once the embedding cache holds its prompts (the first time,
// about 25 s more; docs/evaluation.md). "full": the trainers' defaults.
export const QUICK_CONFIG: Record<Kind, Record<string, unknown>> = {
  policy: { learned: { sft: { reliability_epochs: 8, epochs: 8 }, rl: { iterations: 20, tasks_per_iteration: 32 } } },
  reward_model: { rm: { train: { epochs: 40, batch_size: 16 } } },
};
export const QUICK_OUTCOMES = ["reflexion.jsonl.gz"];

// `unseen` (policies only): trained for pools of other models, each calibrated on its own
// probe outcomes (a pool's calibration source), as the unseen-pool evaluation trains it.
// `guide` (policies only): a reward model's checkpoint id; RL also plays the cells the
// outcome files did not record, scored by it (train_policy --guide). `collections`: ids of
// collections whose recorded outcomes it trains on beside the files (docs/collect.md).
export function jobConfig(
  kind: Kind,
  size: Size,
  seed: number,
  outcomes: string[],
  unseen = false,
  guide: number | null = null,
  collections: number[] = [],
): Record<string, unknown> {
  const chosen = outcomes.length > 0 ? outcomes : size === "quick" ? QUICK_OUTCOMES : [];
  return {
    seed,
    ...(chosen.length > 0 ? { outcomes: chosen } : {}),
    ...(size === "quick" ? QUICK_CONFIG[kind] : {}),
    ...(kind === "policy" && unseen ? { unseen: true } : {}),
    ...(kind === "policy" && guide !== null ? { guide } : {}),
    ...(collections.length > 0 ? { collections } : {}),
  };
}

export function lineageSummary(lineage: Record<string, unknown>): string {
  const parts: string[] = [];
  if (Array.isArray(lineage.outcomes)) parts.push(lineage.outcomes.join(", "));
  if (Array.isArray(lineage.collections) && lineage.collections.length > 0)
    parts.push(`collections ${lineage.collections.map((id) => `#${String(id)}`).join(", ")}`);
  if (typeof lineage.seed === "number") parts.push(`seed ${lineage.seed}`);
  if (typeof lineage.live_runs === "number") parts.push(`${lineage.live_runs} live runs`);
  if (lineage.unseen === true) parts.push("for unseen pools");
  if (typeof lineage.guide === "number") parts.push(`guided by reward model ${lineage.guide}`);
  if (typeof lineage.pairs === "number") parts.push(`${lineage.pairs} pairs`);
  if (typeof lineage.run_pairs === "number") parts.push(`${lineage.run_pairs} run pairs`);
  if (typeof lineage.replaces === "string") parts.push(`replaced ${lineage.replaces} as the default`);
  return parts.join(" · ") || "–";
}
