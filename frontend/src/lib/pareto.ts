// What the Evaluation page draws and tabulates, read from an evaluation's JSON report
// (`python -m orchestrator.evaluate --json`, docs/evaluation.md). Nothing here invents a
// number: every value is the report's, or absent.

export interface MethodReport {
  not_applicable?: string;
  macro_acc?: number | null;
  cost_per_query?: number | null;
  aiq?: number | null;
  aiq_rb?: number | null; // RouterBench's AIQ; absent in reports from before it
  apgr?: number | null;
  cpt50?: number | null;
  cpt80?: number | null;
  points?: [number, number][];
  knobs?: (number | null)[];
  per_domain?: Record<string, number>;
  calls_per_query?: number | null;
  violations?: number;
}

export interface EvaluationReport {
  methods?: Record<string, MethodReport>;
  items?: number;
  train_items?: number;
  probe_items?: number;
  split?: string;
  models?: string[];
  single_pairs?: Record<string, [number, number]>;
  anchors?: { weak?: [string, number, number]; strong?: [string, number, number] };
  cost_range?: [number, number];
  seed?: number;
  // Per method (never the oracle or the zero router): its points that a single pair, or the
  // zero router's hull, beats at no more cost. Absent in reports from before it.
  dominated_points?: Record<string, number>;
  // The learned policy's cost presets, each against its promise (orchestrator/evaluate_frontier.py,
  // `preset_checks`). Absent in reports from before it; {} where the learned policy did not run.
  presets?: Record<string, PresetCheck>;
}

/** One preset of the learned policy: its point at the preset's λ, what it was held against, and whether it held. */
export interface PresetCheck {
  lambda: number;
  macro: number;
  cost: number;
  against: string;
  held: boolean;
}

export interface ParetoPoint {
  cost: number;
  accuracy: number;
  knob: number | null;
  method: string;
}

export interface ParetoSeries {
  method: string;
  points: ParetoPoint[]; // cost > 0 only (a log axis has no 0), cheapest first
  hidden: number; // points at cost 0 left off the plot
  line: boolean; // drawn as a line: the learned policy, and any method with several points (the zero router's hull)
}

export const LEARNED = "learned";
// The CLI's order (orchestrator.evaluate.METHOD_NAMES); a stored report's keys come back
// from Postgres (jsonb) in another order.
export const METHOD_ORDER = [
  "learned",
  "random",
  "cheapest",
  "best_single",
  "zero",
  "oracle",
  "cascade",
  "knn",
  "cluster",
  "mf",
  "always_decompose",
  "self_consistency",
];

const rank = (name: string) => (METHOD_ORDER.includes(name) ? METHOD_ORDER.indexOf(name) : METHOD_ORDER.length);
const byRank = <T>([a]: [string, T], [b]: [string, T]) => rank(a) - rank(b) || a.localeCompare(b);

/** The report's methods in the CLI's order, any unknown ones last by name. */
export function orderedMethods(report: EvaluationReport): [string, MethodReport][] {
  return Object.entries(report.methods ?? {}).sort(byRank);
}

/** The report's dominated-point counts in the CLI's order, the zero router's own apart
 * (`zeroOwnDominated`); empty when it has none. */
export function dominatedPoints(report: EvaluationReport): [string, number][] {
  return Object.entries(report.dominated_points ?? {})
    .filter(([name]) => name !== "zero")
    .sort(byRank);
}

/** How many of the zero router's own points a single pair or its other points beat: the same
 * test for a router that reads no prompt; null without it. */
export function zeroOwnDominated(report: EvaluationReport): number | null {
  return report.dominated_points?.zero ?? null;
}

// The presets' order (orchestrator.policies.COST_PRESETS): the dearest first.
export const PRESET_ORDER = ["best", "balanced", "cheap"];

const presetRank = (name: string) => (PRESET_ORDER.includes(name) ? PRESET_ORDER.indexOf(name) : PRESET_ORDER.length);

/** The report's preset checks: best, balanced, cheap, any others last by name; empty when it has none. */
export function presetChecks(report: EvaluationReport): [string, PresetCheck][] {
  return Object.entries(report.presets ?? {}).sort(([a], [b]) => presetRank(a) - presetRank(b) || a.localeCompare(b));
}

/** A cost as the CLI prints it (Python's `${:.3e}`): 4.993e-3 → "$4.993e-03". */
export function usdCli(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  const [mantissa, exp] = value.toExponential(3).split("e");
  const e = Number(exp);
  return `$${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

/** A preset check in the CLI's words, up to its verdict: "preset best (λ=0): 0.8342 at $4.993e-03; against …". */
export function presetLine(name: string, check: PresetCheck): string {
  const macro = Number.isFinite(check.macro) ? check.macro.toFixed(4) : "–";
  return `preset ${name} (λ=${Number(check.lambda.toPrecision(6))}): ${macro} at ${usdCli(check.cost)}; against ${check.against}`;
}

/** A preset check's verdict, as the CLI prints it. */
export const presetVerdict = (check: PresetCheck) => (check.held ? "held" : "NOT HELD");

/**
 * What a method's knob is called: λ prices cost, τ is the cascade's confidence threshold, and
 * the zero router's knob is a step along its hull (1.5: halfway from vertex 1 to vertex 2).
 */
export function knobName(method: string): string {
  if (method === "cascade") return "τ";
  if (method === "zero") return "hull step";
  return ["learned", "knn", "cluster", "mf"].includes(method) ? "λ" : "knob";
}

/** The learned policy's knobs at or above this offset are its agreement-cascade points (orchestrator/routing/methods.py). */
export const CASCADE_OFFSET = 100;

/** A knob as people read it: "λ = 0.05", or "λ = 0.05 + cascade" for the learned policy's cascade points. */
export function formatKnob(method: string, knob: number): string {
  if (method === "learned" && knob >= CASCADE_OFFSET) {
    return `λ = ${Number((knob - CASCADE_OFFSET).toFixed(6))} + cascade`;
  }
  return `${knobName(method)} = ${knob}`;
}

/** One series per method that applies, the learned policy first. */
export function paretoSeries(report: EvaluationReport): ParetoSeries[] {
  const series: ParetoSeries[] = [];
  for (const [method, result] of orderedMethods(report)) {
    if (result.not_applicable !== undefined || !result.points?.length) continue;
    const all = result.points.map(([cost, accuracy], k) => ({
      cost,
      accuracy,
      knob: result.knobs?.[k] ?? null,
      method,
    }));
    const shown = all.filter((p) => p.cost > 0 && Number.isFinite(p.cost) && Number.isFinite(p.accuracy));
    shown.sort((a, b) => a.cost - b.cost || a.accuracy - b.accuracy);
    series.push({
      method,
      points: shown,
      hidden: all.length - shown.length,
      line: method === LEARNED || shown.length > 1,
    });
  }
  return series;
}

/** The single pairs (always calling one model) as grey reference points. */
export function singlePairPoints(report: EvaluationReport): ParetoPoint[] {
  return Object.entries(report.single_pairs ?? {})
    .filter(([, [cost]]) => cost > 0)
    .map(([method, [cost, accuracy]]) => ({ cost, accuracy, knob: null, method }));
}

/** A log axis's domain: whole decades around the costs; null when there is nothing to show. */
export function logDomain(costs: number[]): [number, number] | null {
  const positive = costs.filter((c) => c > 0 && Number.isFinite(c));
  if (positive.length === 0) return null;
  const decade = (exp: number) => Number(`1e${exp}`); // exact, where 10 ** -5 is not
  const low = decade(Math.floor(Math.log10(Math.min(...positive))));
  let high = decade(Math.ceil(Math.log10(Math.max(...positive))));
  if (high <= low) high = low * 10;
  return [low, high];
}

/** Ticks at 1, 2 and 5 times each power of ten inside the domain. */
export function logTicks([low, high]: [number, number]): number[] {
  const ticks: number[] = [];
  for (let exp = Math.floor(Math.log10(low)); exp <= Math.ceil(Math.log10(high)); exp++) {
    for (const m of [1, 2, 5]) {
      const tick = Number((m * 10 ** exp).toPrecision(3));
      if (tick >= low * 0.999 && tick <= high * 1.001) ticks.push(tick);
    }
  }
  return ticks;
}

/** An accuracy axis from the data, in steps of 0.1, never beyond [0, 1]. */
export function accuracyDomain(values: number[]): [number, number] {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return [0, 1];
  const low = Math.max(0, Math.floor(Math.min(...finite) * 10 - 1e-9) / 10);
  const high = Math.min(1, Math.ceil(Math.max(...finite) * 10 + 1e-9) / 10);
  return [low, high > low ? high : Math.min(1, low + 0.1)];
}

export interface MetricsRow {
  method: string;
  notApplicable: string | null;
  macroAcc: number | null;
  costPerQuery: number | null;
  aiq: number | null;
  aiqRb: number | null; // RouterBench's AIQ; null in reports from before it
  apgr: number | null;
  cpt50: number | null;
  cpt80: number | null;
  callsPerQuery: number | null;
  bestKnob: number | null; // the knob of the headline point, for a swept method
  swept: boolean;
}

const num = (value: number | null | undefined): number | null =>
  value === null || value === undefined || !Number.isFinite(value) ? null : value;

/** The metrics table: every method of the report, in its order; those that do not apply with their reason. */
export function metricsRows(report: EvaluationReport): MetricsRow[] {
  return orderedMethods(report).map(([method, r]) => {
    const swept = (r.points?.length ?? 0) > 1;
    let bestKnob: number | null = null;
    if (swept && r.points && r.knobs) {
      const k = r.points.findIndex(([c, a]) => c === r.cost_per_query && a === r.macro_acc);
      bestKnob = k >= 0 ? (r.knobs[k] ?? null) : null;
    }
    return {
      method,
      notApplicable: r.not_applicable ?? null,
      macroAcc: num(r.macro_acc),
      costPerQuery: num(r.cost_per_query),
      aiq: num(r.aiq),
      aiqRb: num(r.aiq_rb),
      apgr: num(r.apgr),
      cpt50: num(r.cpt50),
      cpt80: num(r.cpt80),
      callsPerQuery: num(r.calls_per_query),
      bestKnob,
      swept,
    };
  });
}

/** Domains (columns) and, per method that applies, its accuracy in each (null where absent). */
export function perDomain(report: EvaluationReport): {
  domains: string[];
  rows: { method: string; values: (number | null)[] }[];
} {
  const applicable = orderedMethods(report).filter(([, r]) => r.not_applicable === undefined);
  const domains = [...new Set(applicable.flatMap(([, r]) => Object.keys(r.per_domain ?? {})))].sort();
  const rows = applicable.map(([method, r]) => ({ method, values: domains.map((d) => num(r.per_domain?.[d])) }));
  return { domains, rows };
}

/** $/query in a compact scientific form: 3.4e-5 → "$3.4e-5". */
export function usdPerQuery(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  if (value === 0) return "$0";
  if (value >= 0.01) return `$${value.toFixed(3)}`;
  const [mantissa, exp] = value.toExponential(2).split("e");
  return `$${mantissa}e${Number(exp)}`;
}
