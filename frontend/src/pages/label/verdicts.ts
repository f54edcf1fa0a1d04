// What a labeler picks, by the sides as shown, and the verdict stored for it.

/** What the labeler picked, by the sides as shown: A = left, B = right. */
export type Choice = "A" | "B" | "T" | "S";
export type Verdict = "a" | "b" | "tie" | "skip";

/**
 * The stored verdict for a displayed choice. `swap` (from the API) means run B is shown on
 * the left, so "left is better" names run B. Verdicts always name the pair's own A and B.
 */
export function verdictFor(choice: Choice, swap: boolean): Verdict {
  if (choice === "T") return "tie";
  if (choice === "S") return "skip";
  const left: Verdict = swap ? "b" : "a";
  const right: Verdict = swap ? "a" : "b";
  return choice === "A" ? left : right;
}

export const CHOICES: { key: Choice; label: string; short: string }[] = [
  { key: "A", label: "Left is better", short: "Left" },
  { key: "B", label: "Right is better", short: "Right" },
  { key: "T", label: "Tie", short: "Tie" },
  { key: "S", label: "Skip", short: "Skip" },
];

export const SAID: Record<Choice, string> = {
  A: "left is better",
  B: "right is better",
  T: "a tie",
  S: "skipped",
};

export const SOURCES = [
  "human",
  "correct_over_incorrect",
  "cheaper_correct",
  "specialized_over_base",
  "node_level",
] as const;
