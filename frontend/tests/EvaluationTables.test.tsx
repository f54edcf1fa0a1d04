// The metrics table: RouterBench's AIQ beside the AIQ, the zero router marked as the baseline
// it is, and the dominated-point counts and the learned policy's preset checks under the table
// only when the report has them.
import { render, screen, within } from "@testing-library/react";
import { expect, it } from "vitest";

import type { EvaluationReport } from "../src/lib/pareto";
import { PRESETS } from "./support";
import { MetricsTable } from "../src/pages/evaluation/Tables";

const REPORT: EvaluationReport = {
  methods: {
    learned: {
      macro_acc: 0.56,
      cost_per_query: 7.4e-5,
      aiq: 0.561,
      aiq_rb: 0.523,
      apgr: 0.77,
      points: [
        [4e-5, 0.54],
        [7.4e-5, 0.56],
      ],
      knobs: [1, 0.01],
      calls_per_query: 1,
    },
    zero: {
      macro_acc: 0.6,
      cost_per_query: 2e-4,
      aiq: 0.5,
      aiq_rb: 0.55,
      points: [
        [3.4e-5, 0.45],
        [2e-4, 0.6],
      ],
      knobs: [0, 1.5],
      calls_per_query: 1,
    },
    best_single: { macro_acc: 0.6, cost_per_query: 2e-4, aiq: 0.48, points: [[2e-4, 0.6]], knobs: [null] },
    always_decompose: { not_applicable: "the outcome table has no composite tasks to decompose" },
  },
  dominated_points: { mf: 1, learned: 0, knn: 1 },
};

const row = (method: string) => within(screen.getByTestId("metrics-table")).getByText(method).closest("tr")!;

it("shows RouterBench's AIQ after the AIQ, and – where the report has none", () => {
  render(<MetricsTable report={REPORT} />);
  const heads = [...screen.getByTestId("metrics-table").querySelectorAll("thead th")].map((th) => th.textContent);
  expect(heads.slice(3, 5)).toEqual(["AIQ", "AIQ (RouterBench)"]);
  const cells = (method: string) => [...row(method).querySelectorAll("td")].map((td) => td.textContent);
  expect(cells("learned").slice(2, 4)).toEqual(["0.561", "0.523"]);
  expect(cells("best_single").slice(2, 4)).toEqual(["0.480", "–"]);
  const na = row("always_decompose").querySelector("td")!;
  expect(na.colSpan).toBe(heads.length - 1); // spans every column but the method's
});

it("marks the zero router and its best hull step", () => {
  render(<MetricsTable report={REPORT} />);
  expect(row("zero").querySelector("th")!.textContent).toBe("zero (fixed pairs, no prompt) best @ hull step = 1.5");
});

it("counts dominated points under the table, in the CLI's order", () => {
  render(<MetricsTable report={REPORT} />);
  expect(screen.getByTestId("dominated-points").textContent).toBe(
    "Dominated points (a single pair or the zero router does better at no more cost): learned 0, knn 1, mf 1",
  );
});

it("gives the zero router's own dominated points apart, as the noise floor", () => {
  const dominated_points = { ...REPORT.dominated_points, zero: 3 };
  render(<MetricsTable report={{ ...REPORT, dominated_points }} />);
  expect(screen.getByTestId("dominated-points").textContent).toBe(
    "Dominated points (a single pair or the zero router does better at no more cost): learned 0, knn 1, mf 1" +
      "; the zero router's own, by a single pair or its other points (a router that reads no prompt): 3",
  );
});

it("says nothing of dominated points when the report has none", () => {
  render(<MetricsTable report={{ ...REPORT, dominated_points: undefined }} />);
  expect(screen.queryByTestId("dominated-points")).toBeNull();
  expect(screen.queryByText(/Dominated points/)).toBeNull();
});

it("counts against single pairs alone where the zero router did not run", () => {
  const methods = { ...REPORT.methods, zero: { not_applicable: "no probe split" } };
  render(<MetricsTable report={{ ...REPORT, methods }} />);
  expect(screen.getByTestId("dominated-points").textContent).toMatch(/^Dominated points \(a single pair does better/);
});

it("checks the learned policy's presets under the dominated points, in the CLI's words and order", () => {
  render(<MetricsTable report={{ ...REPORT, presets: PRESETS }} />);
  const list = screen.getByRole("list", { name: "Presets of the learned policy" });
  const lines = within(list)
    .getAllByRole("listitem")
    .map((li) => li.textContent);
  expect(lines).toEqual([
    "preset best (λ=0): 0.8342 at $4.993e-03; against the most accurate pair: 0.8342 at $4.993e-03: held",
    "preset balanced (λ=0.05): 0.8186 at $1.664e-03; against single pairs and the zero router: not dominated: NOT HELD",
    "preset cheap (λ=1): 0.5414 at $8.117e-05; against the cheapest pair: 0.5414 at $8.117e-05: held",
  ]);
  // After the dominated-point counts.
  const dominated = screen.getByTestId("dominated-points");
  expect(dominated.compareDocumentPosition(list) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
});

it("marks a preset NOT HELD as a failure, in words as well as colour", () => {
  render(<MetricsTable report={{ ...REPORT, presets: PRESETS }} />);
  const notHeld = screen.getByText("NOT HELD");
  expect(notHeld.className).toBe("status failed");
  expect(notHeld.closest("li")!.dataset.preset).toBe("balanced");
  expect(screen.getAllByRole("listitem").filter((li) => li.querySelector(".status"))).toHaveLength(1);
});

it("says nothing of presets when the report has none", () => {
  for (const presets of [undefined, {}]) {
    const { unmount } = render(<MetricsTable report={{ ...REPORT, presets }} />);
    expect(screen.queryByTestId("preset-checks")).toBeNull();
    expect(screen.queryByText(/^preset /)).toBeNull();
    unmount();
  }
});
