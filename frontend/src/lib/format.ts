// Numbers as people read them: dollars, tokens, seconds.

export function usd(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (value === 0) return "$0";
  if (Math.abs(value) < 0.01) return `$${value.toPrecision(2)}`;
  return `$${value.toFixed(2)}`;
}

export function tokens(value: number | null | undefined): string {
  if (value === null || value === undefined) return "–";
  if (value >= 1_000_000) return `${(value / 1_000_000).toFixed(1)}M`;
  if (value >= 1_000) return `${(value / 1_000).toFixed(1)}k`;
  return String(Math.round(value));
}

export function seconds(value: number | null | undefined): string {
  if (value === null || value === undefined) return "–";
  if (value < 1) return `${Math.round(value * 1000)} ms`;
  if (value < 60) return `${value.toFixed(1)} s`;
  return `${Math.floor(value / 60)} min ${Math.round(value % 60)} s`;
}

export function pct(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  return `${(value * 100).toFixed(digits)}%`;
}

/** Any JSON value as text: a string as it is, a fraction to 3 decimals, anything else as JSON. */
export function plain(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" && !Number.isInteger(value)) return value.toFixed(3);
  return JSON.stringify(value) ?? "";
}

export function when(iso: string | null | undefined): string {
  if (!iso) return "–";
  return new Date(iso).toLocaleString();
}

/** The text that tells a task apart: after few-shot examples (blank-line separated solved
 * examples that many recorded prompts share), the last block; else the whole text. As the
 * API's `question` of a recorded item. */
export function questionOf(text: string): string {
  const blocks = text
    .trim()
    .split("\n\n")
    .filter((block) => block.trim());
  return blocks.length >= 3 ? blocks[blocks.length - 1].trim() : text.trim();
}
