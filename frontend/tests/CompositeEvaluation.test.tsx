// A composite evaluation: the start form asks for one with its penalty, and its report shows
// each method's AIQ, the deciders' split rates by λ and the sensitivity table.
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, expect, it, vi } from "vitest";

import { CompositeResults, isCompositeReport, type CompositeReport } from "../src/pages/evaluation/CompositeResults";
import { StartForm } from "../src/pages/evaluation/StartForm";
import { renderAt, reply, stubFetch } from "./support";

afterEach(() => vi.unstubAllGlobals());

const REPORT: CompositeReport = {
  kind: "composites",
  assumptions: "Assumptions: a delegated call scores each part as the pair's recorded answer.",
  summary: {
    penalty: 0,
    seeds: [0, 1],
    test: { same_domain: 10, mixed_domain: 12 },
    planner: "gemma-2-9b-it",
    methods: {
      decide_mf: { aiq: [0.71, 0.72], aiq_mean: 0.715, aiq_sd: 0.005, score: 0.74, cost: 0.0124, decompose_rate: 0.7 },
      learned: { aiq: [0.73, 0.734], aiq_mean: 0.732, aiq_sd: 0.002, score: 0.75, cost: 0.0135, decompose_rate: 0.7 },
    },
    rates: { decide_mf: { "0": [0.54, 0.84], "1": [0.52, 0.98] }, learned: { "0": [0.51, 0.58], "1": [0.45, 0.72] } },
    decisions: { "0": 0.61, "1": 0.58 },
    sensitivity: { "0": { decide_mf: 0.715, learned: 0.732 }, "0.1": { decide_mf: 0.71, learned: 0.726 } },
  },
};

it("shows each method's AIQ, the split rates by λ and the sensitivity", () => {
  expect(isCompositeReport(REPORT)).toBe(true);
  expect(isCompositeReport({ methods: {} })).toBe(false);
  render(<CompositeResults report={REPORT} />);
  const learned = within(screen.getByTestId("composite-table")).getByText("learned").closest("tr")!;
  expect(learned.className).toBe("best");
  expect(learned.textContent).toContain("0.7320 ± 0.0020");
  expect(learned.textContent).toContain("0.7300 / 0.7340");
  const rates = within(screen.getByTestId("composite-rates")).getByText("learned").closest("tr")!;
  expect(rates.textContent).toContain("0.51 / 0.58");
  expect(screen.getByTestId("composite-decisions").textContent).toContain("0.61 at λ=0");
  expect(screen.getByTestId("composite-sensitivity").textContent).toContain("0.7260");
  expect(screen.getByTestId("composite-assumptions").textContent).toContain("12 mixed-domain");
});

it("starts a composite evaluation with its penalty and sensitivity", async () => {
  const posted: unknown[] = [];
  stubFetch(({ url, method, body }) => {
    if (url.startsWith("/api/evaluations/options")) {
      return reply(200, {
        presets: {},
        outcomes: ["llmrouter.jsonl.gz", "routerbench.jsonl.gz"],
        default_outcomes: ["llmrouter.jsonl.gz"],
        methods: [],
        composites: {
          presets: { quick: { train_count: 300, test_count: 150 } },
          default_outcomes: ["routerbench.jsonl.gz", "llmrouter.jsonl.gz"],
          methods: ["learned"],
        },
      });
    }
    if (method === "POST") posted.push(body);
    return reply(201, { id: 7, status: "queued", progress: 0, message: "", config: {}, checkpoint_id: null });
  });
  const started = vi.fn();
  renderAt("/evaluation", <StartForm onStarted={started} />);
  const user = userEvent.setup();
  await user.selectOptions(screen.getByTestId("evaluation-kind"), "composites");
  expect(await screen.findByText(/routerbench.jsonl.gz, llmrouter.jsonl.gz \(default\)/)).toBeTruthy();
  expect(screen.getByText(/300 train and 150 test per seed/)).toBeTruthy();
  await user.clear(screen.getByTestId("evaluation-penalty"));
  await user.type(screen.getByTestId("evaluation-penalty"), "0.05");
  await user.click(screen.getByLabelText(/Sensitivity table/));
  await user.click(screen.getByTestId("start-evaluation"));
  await vi.waitFor(() => expect(started).toHaveBeenCalledWith(7));
  expect(posted).toEqual([
    { kind: "composites", preset: "quick", seed: 0, outcomes: [], penalty: 0.05, sensitivity: [0.01, 0.05, 0.1] },
  ]);
});
