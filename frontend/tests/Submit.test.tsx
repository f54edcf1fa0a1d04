// "Run again" (the run page's link to /?task=ID&pool=ID) runs the same task once more with
// the settings chosen here: no new task is made.
import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, expect, it, vi } from "vitest";
import { Route, Routes } from "react-router";

import SubmitPage from "../src/pages/Submit";
import { renderAt, reply, stubFetch } from "./support";

const OPTIONS = {
  policies: [{ name: "default", needs_checkpoint: false }],
  default_policy: "default",
  presets: { best: 0, balanced: 0.05, cheap: 1 },
  checkers: [],
  domains: [],
  default_pool_id: 1,
  sources: [],
  benchmarks: [],
  vendored_benchmarks: ["gsm8k", "mbpp"],
};
const POOLS = {
  items: [
    { id: 1, name: "replay-demo" },
    { id: 3, name: "other" },
  ],
  count: 2,
};

function stub(task: number | null) {
  const posted: { url: string; body: unknown }[] = [];
  stubFetch(({ url, method, body }) => {
    if (method === "POST") {
      posted.push({ url, body });
      return reply(201, { id: 41, task_id: 7 });
    }
    if (url.startsWith("/api/options")) return reply(200, OPTIONS);
    if (url.startsWith("/api/pools")) return reply(200, POOLS);
    if (task !== null && url === `/api/tasks/${task}`)
      return reply(200, { id: task, text: "Which is larger, 7 or 12?" });
    return reply(404, { detail: "There is no task with id 8." });
  });
  return posted;
}

function renderSubmit(path: string) {
  return renderAt(
    path,
    <Routes>
      <Route path="/" element={<SubmitPage />} />
      <Route path="/runs/:id" element={<p>run page</p>} />
      <Route path="/collections" element={<p>collections page</p>} />
    </Routes>,
  );
}

afterEach(() => vi.unstubAllGlobals());

it("runs the same task again on the pool it came from, without making a task", async () => {
  const posted = stub(7);
  renderSubmit("/?task=7&pool=3");
  expect(await screen.findByText("Run task #7 again")).toBeTruthy();
  expect(screen.getByTestId("again-text").textContent).toBe("Which is larger, 7 or 12?");
  await userEvent.click(screen.getByRole("radio", { name: /best/ }));
  await userEvent.click(screen.getByTestId("submit-run"));
  expect(await screen.findByText("run page")).toBeTruthy();
  expect(posted).toHaveLength(1);
  expect(posted[0].url).toBe("/api/runs");
  expect(posted[0].body).toMatchObject({ task_id: 7, pool_id: 3, preset: "best" });
});

it("says so when the task to run again is not there, and runs nothing", async () => {
  const posted = stub(null);
  renderSubmit("/?task=8");
  expect(await screen.findByText("There is no task with id 8.")).toBeTruthy();
  expect(screen.getByTestId<HTMLButtonElement>("submit-run").disabled).toBe(true);
  expect(posted).toHaveLength(0);
});

it("makes tasks of a benchmark, says how many, and links to collecting on them", async () => {
  const posted: { url: string; body: unknown }[] = [];
  stubFetch(({ url, method, body }) => {
    if (method === "POST") {
      posted.push({ url, body });
      const n = (body as { n: number }).n;
      if (n > 100)
        return reply(422, { detail: "n must be within 1 and 100 (the items of mbpp), not 500.", field: "n" });
      return reply(201, { task_ids: [5, 6, 7], created: 2, existing: 1 });
    }
    if (url.startsWith("/api/options")) return reply(200, OPTIONS);
    if (url.startsWith("/api/pools")) return reply(200, POOLS);
    return reply(404, { detail: "not here" });
  });
  renderSubmit("/");
  const user = userEvent.setup();
  await user.click(await screen.findByTestId("mode-benchmark"));
  await user.click(screen.getByTestId("make-tasks"));
  expect(screen.getByText("Choose a benchmark.")).toBeTruthy();
  expect(posted).toHaveLength(0);

  await user.selectOptions(screen.getByTestId("benchmark-name"), "mbpp");
  const n = screen.getByTestId("benchmark-n");
  await user.clear(n);
  await user.type(n, "500{Control>}{Enter}{/Control}");
  expect(await screen.findByText("n must be within 1 and 100 (the items of mbpp), not 500.")).toBeTruthy();

  await user.clear(n);
  await user.type(n, "3");
  await user.click(screen.getByTestId("make-tasks"));
  const made = await screen.findByTestId("benchmark-made");
  expect(made.textContent).toContain("2 task(s) made, 1 of the sample there already: 3 in all.");
  expect(posted.at(-1)).toEqual({ url: "/api/tasks/from-benchmark", body: { benchmark: "mbpp", n: 3, seed: 0 } });
  expect(screen.getByRole("link", { name: "Run the first one" }).getAttribute("href")).toBe("/?task=5");
  await user.click(screen.getByRole("link", { name: "Collect on them" }));
  expect(await screen.findByText("collections page")).toBeTruthy();
});
