import { describe, expect, it } from "vitest";

import {
  accuracyDomain,
  dominatedPoints,
  formatKnob,
  logDomain,
  logTicks,
  metricsRows,
  orderedMethods,
  paretoSeries,
  perDomain,
  presetChecks,
  presetLine,
  presetVerdict,
  singlePairPoints,
  usdCli,
  usdPerQuery,
  zeroOwnDominated,
  type EvaluationReport,
} from "../src/lib/pareto";
import { PRESETS } from "./support";

// Shaped like `python -m orchestrator.evaluate --json` (docs/evaluation.md), trimmed.
const report: EvaluationReport = {
  methods: {
    cheapest: {
      macro_acc: 0.45,
      cost_per_query: 3.4e-5,
      aiq: 0.45,
      apgr: 0,
      cpt50: null,
      cpt80: null,
      points: [[3.4e-5, 0.45]],
      knobs: [null],
      per_domain: { math: 0.7, code: 0.3 },
      calls_per_query: 1,
    },
    learned: {
      macro_acc: 0.56,
      cost_per_query: 7.4e-5,
      aiq: 0.56,
      aiq_rb: 0.52,
      apgr: 0.77,
      cpt50: 0.118,
      cpt80: null,
      points: [
        [8.2e-5, 0.56],
        [7.4e-5, 0.56],
        [0, 0.1],
        [4.0e-5, 0.54],
      ],
      knobs: [0, 0.01, 5, 1],
      per_domain: { math: 0.78, code: 0.68, chat: 0.76 },
      calls_per_query: 1.2,
    },
    always_decompose: { not_applicable: "the outcome table has no composite tasks to decompose" },
  },
  single_pairs: { "gemma-2-9b-it": [3.4e-5, 0.45], free: [0, 0.2] },
};

describe("paretoSeries", () => {
  it("puts the learned policy first as a line, sorted by cost, without the $0 point", () => {
    const series = paretoSeries(report);
    expect(series.map((s) => s.method)).toEqual(["learned", "cheapest"]);
    const learned = series[0];
    expect(learned.line).toBe(true);
    expect(learned.points.map((p) => p.cost)).toEqual([4.0e-5, 7.4e-5, 8.2e-5]);
    expect(learned.points.map((p) => p.knob)).toEqual([1, 0.01, 0]);
    expect(learned.hidden).toBe(1);
    expect(series[1].line).toBe(false); // a single point
  });

  it("leaves out methods that do not apply", () => {
    expect(paretoSeries(report).some((s) => s.method === "always_decompose")).toBe(false);
  });

  it("keeps single pairs with a cost as reference points", () => {
    expect(singlePairPoints(report).map((p) => p.method)).toEqual(["gemma-2-9b-it"]);
  });
});

// The zero router and RouterBench's AIQ, as reports have them since they came in.
const withZero: EvaluationReport = {
  methods: {
    oracle: { macro_acc: 0.9, cost_per_query: 5e-5, aiq: 0.9, aiq_rb: 0.9, points: [[5e-5, 0.9]], knobs: [null] },
    zero: {
      macro_acc: 0.6,
      cost_per_query: 2e-4,
      aiq: 0.5,
      aiq_rb: 0.55,
      points: [
        [3.4e-5, 0.45],
        [1e-4, 0.52],
        [2e-4, 0.6],
      ],
      knobs: [0, 0.5, 1.5],
    },
    best_single: { macro_acc: 0.6, cost_per_query: 2e-4, aiq: 0.48, points: [[2e-4, 0.6]], knobs: [null] },
    learned: { macro_acc: 0.56, cost_per_query: 7.4e-5, aiq: 0.56, points: [[7.4e-5, 0.56]], knobs: [0] },
  },
  dominated_points: { mf: 1, learned: 0, knn: 1, zero: 2 },
};

describe("the zero router", () => {
  it("comes right after best_single, as in the CLI", () => {
    expect(orderedMethods(withZero).map(([m]) => m)).toEqual(["learned", "best_single", "zero", "oracle"]);
  });

  it("is drawn as a line through its hull points", () => {
    const zero = paretoSeries(withZero).find((s) => s.method === "zero")!;
    expect(zero.line).toBe(true);
    expect(zero.points.map((p) => p.knob)).toEqual([0, 0.5, 1.5]);
  });

  it("names its knob a hull step, best at the dearest vertex", () => {
    expect(formatKnob("zero", 1.5)).toBe("hull step = 1.5");
    expect(metricsRows(withZero).find((r) => r.method === "zero")).toMatchObject({ bestKnob: 1.5, aiqRb: 0.55 });
  });

  it("carries RouterBench's AIQ, null where an older report has none", () => {
    const rows = metricsRows(withZero);
    expect(rows.find((r) => r.method === "best_single")?.aiqRb).toBeNull();
    expect(metricsRows(report)[0].aiqRb).toBe(0.52);
    expect(metricsRows(report)[1].aiqRb).toBeNull();
  });

  it("lists dominated points in the CLI's order, none in an older report", () => {
    expect(dominatedPoints(withZero)).toEqual([
      ["learned", 0],
      ["knn", 1],
      ["mf", 1],
    ]);
    expect(dominatedPoints(report)).toEqual([]);
  });

  it("keeps its own dominated points apart: the noise floor, null in an older report", () => {
    expect(zeroOwnDominated(withZero)).toBe(2);
    expect(zeroOwnDominated(report)).toBeNull();
  });
});

describe("axes", () => {
  it("spans whole decades on the log axis", () => {
    expect(logDomain([3.4e-5, 8.2e-5, 3.07e-4])).toEqual([1e-5, 1e-3]);
    expect(logDomain([0, -1])).toBeNull();
    expect(logDomain([1e-4])).toEqual([1e-4, 1e-3]);
  });

  it("ticks at 1, 2 and 5 per decade", () => {
    expect(logTicks([1e-5, 1e-3])).toEqual([1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3]);
  });

  it("rounds the accuracy axis to tenths inside [0, 1]", () => {
    expect(accuracyDomain([0.45, 0.56])).toEqual([0.4, 0.6]);
    expect(accuracyDomain([0.95, 1])).toEqual([0.9, 1]);
    expect(accuracyDomain([])).toEqual([0, 1]);
  });
});

describe("tables", () => {
  it("lists every method, the inapplicable one with its reason, and the best λ", () => {
    const rows = metricsRows(report);
    expect(rows.map((r) => r.method)).toEqual(["learned", "cheapest", "always_decompose"]); // the CLI's order
    expect(rows[0]).toMatchObject({ macroAcc: 0.56, bestKnob: 0.01, swept: true, cpt80: null });
    expect(rows[2].notApplicable).toMatch(/composite tasks/);
    expect(rows[1].bestKnob).toBeNull();
  });

  it("breaks accuracy down by the union of domains", () => {
    const { domains, rows } = perDomain(report);
    expect(domains).toEqual(["chat", "code", "math"]);
    expect(rows.find((r) => r.method === "cheapest")?.values).toEqual([null, 0.3, 0.7]);
  });

  it("writes small costs in scientific form", () => {
    expect(usdPerQuery(3.41e-5)).toBe("$3.41e-5");
    expect(usdPerQuery(0.05)).toBe("$0.050");
    expect(usdPerQuery(null)).toBe("–");
  });
});

describe("formatKnob", () => {
  it("names the learned policy's cascade points and leaves other knobs plain", () => {
    expect(formatKnob("learned", 0.05)).toBe("λ = 0.05");
    expect(formatKnob("learned", 100.05)).toBe("λ = 0.05 + cascade");
    expect(formatKnob("cascade", 0.7)).toBe("τ = 0.7");
    expect(formatKnob("cluster", 0.1)).toBe("λ = 0.1");
  });
});

describe("presets", () => {
  it("come best, balanced, cheap, any others after by name", () => {
    const extra = { ...PRESETS.cheap, lambda: 0.5 };
    const names = presetChecks({ presets: { zz: extra, ...PRESETS, aa: extra } }).map(([name]) => name);
    expect(names).toEqual(["best", "balanced", "cheap", "aa", "zz"]);
  });

  it("are none in an older report, or where the learned policy did not run", () => {
    expect(presetChecks(report)).toEqual([]);
    expect(presetChecks({ presets: {} })).toEqual([]);
  });

  it("read as the CLI prints them", () => {
    const lines = presetChecks({ presets: PRESETS }).map(([name, c]) => `${presetLine(name, c)}: ${presetVerdict(c)}`);
    expect(lines).toEqual([
      "preset best (λ=0): 0.8342 at $4.993e-03; against the most accurate pair: 0.8342 at $4.993e-03: held",
      "preset balanced (λ=0.05): 0.8186 at $1.664e-03; against single pairs and the zero router: not dominated: NOT HELD",
      "preset cheap (λ=1): 0.5414 at $8.117e-05; against the cheapest pair: 0.5414 at $8.117e-05: held",
    ]);
  });

  it("format cost as Python's {:.3e} does", () => {
    expect([0.004993, 8.117e-5, 0, 12.5].map(usdCli)).toEqual(["$4.993e-03", "$8.117e-05", "$0.000e+00", "$1.250e+01"]);
    expect(usdCli(null)).toBe("–");
  });
});
