import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Route, Routes, useLocation } from "react-router";

import { RequireRole } from "../src/auth";
import ComparePage from "../src/pages/Compare";
import RunsPage from "../src/pages/Runs";
import { renderAt, reply, stubFetch } from "./support";

function run(id: number, taskId = 1, status = "succeeded") {
  return {
    id,
    task_id: taskId,
    task_text: `Task ${taskId} text`,
    owner_id: 2,
    owner: "rita",
    pool_id: 1,
    policy: "default",
    checkpoint_id: null,
    status,
    end_reason: "finished",
    cost_preference: 0.05,
    best_of: 1,
    max_cost_usd: null,
    max_nodes: null,
    max_depth: null,
    deadline_s: null,
    tokens_in: 100,
    tokens_out: 20 + id,
    cost_usd: 0.001 * id,
    latency_s: 1 + id,
    final_answer: `answer ${id}`,
    verification: { method: "checker", correct: id % 2 === 0, score: id % 2 === 0 ? 1 : 0 },
    last_seq: 3,
    created_at: "2026-01-01T00:00:00Z",
    started_at: "2026-01-01T00:00:01Z",
    finished_at: "2026-01-01T00:00:05Z",
  };
}

/** More users than one page of the API holds (200): the owner filter must list them all. */
const USERS = Array.from({ length: 230 }, (_, i) => ({
  id: i + 1,
  username: `user${String(i + 1).padStart(3, "0")}`,
  role: "viewer",
}));

function stub(total: number, role = "viewer") {
  const asked: string[] = [];
  stubFetch(({ url }) => {
    asked.push(url);
    if (url === "/api/auth/me") return reply(200, { id: 2, username: "rita", email: "", role, is_staff: false });
    if (url.startsWith("/api/runs?")) {
      const params = new URLSearchParams(url.split("?")[1]);
      const limit = Number(params.get("limit"));
      const offset = Number(params.get("offset") ?? 0);
      const all = Array.from({ length: total }, (_, i) => run(total - i));
      return reply(200, { items: all.slice(offset, offset + limit), count: total });
    }
    const tree = url.match(/^\/api\/runs\/(\d+)\/tree$/);
    if (tree) {
      const id = Number(tree[1]);
      return reply(200, { run: run(id, id === 9 ? 2 : 1), nodes: [] });
    }
    if (url.startsWith("/api/options")) {
      return reply(200, { policies: [{ name: "default", needs_checkpoint: false }], benchmarks: ["gsm8k"] });
    }
    if (url.startsWith("/api/users?")) {
      const params = new URLSearchParams(url.split("?")[1]);
      const [limit, offset] = [Number(params.get("limit")), Number(params.get("offset"))];
      return reply(200, { items: USERS.slice(offset, offset + limit), count: USERS.length });
    }
    return reply(404, { detail: "not here" });
  });
  return asked;
}

function Where() {
  const location = useLocation();
  return <output data-testid="where">{location.pathname + location.search}</output>;
}

function renderRuns(path: string) {
  return renderAt(
    path,
    <>
      <Routes>
        <Route
          path="/runs"
          element={
            <RequireRole needs="viewer">
              <RunsPage />
            </RequireRole>
          }
        />
        <Route
          path="/runs/compare"
          element={
            <RequireRole needs="viewer">
              <ComparePage />
            </RequireRole>
          }
        />
        <Route path="*" element={null} />
      </Routes>
      <Where />
    </>,
  );
}

afterEach(() => vi.unstubAllGlobals());

describe("Runs", () => {
  it("pages through runs and keeps the page in the URL", async () => {
    const user = userEvent.setup();
    const asked = stub(30);
    renderRuns("/runs");
    expect(await screen.findByText("1–25 of 30")).toBeTruthy();
    await user.click(screen.getByRole("button", { name: "Next" }));
    expect(await screen.findByText("26–30 of 30")).toBeTruthy();
    expect(screen.getByTestId("where").textContent).toBe("/runs?offset=25");
    expect(asked.some((u) => u.startsWith("/api/runs?") && u.includes("offset=25") && u.includes("limit=25"))).toBe(
      true,
    );
  });

  it("sends the URL's filters to the API", async () => {
    const asked = stub(3);
    renderRuns("/runs?status=failed&search=prime");
    await screen.findByText("1–3 of 3");
    const call = asked.find((u) => u.startsWith("/api/runs?") && u.includes("status=failed"));
    expect(call).toBeDefined();
    expect(call).toContain("search=prime");
    expect(screen.getByLabelText<HTMLInputElement>("Search tasks").value).toBe("prime");
  });

  it("a status filter goes into the URL and back to the first page", async () => {
    const user = userEvent.setup();
    stub(30);
    renderRuns("/runs?offset=25");
    await screen.findByText("26–30 of 30");
    await user.selectOptions(screen.getByLabelText("Status"), "succeeded");
    await waitFor(() => expect(screen.getByTestId("where").textContent).toBe("/runs?status=succeeded"));
  });

  it("Enter on a row opens the run", async () => {
    const user = userEvent.setup();
    stub(3);
    renderRuns("/runs");
    const row = (await screen.findByText("#2")).closest("tr")!;
    row.focus();
    await user.keyboard("{Enter}");
    expect(screen.getByTestId("where").textContent).toBe("/runs/2");
  });

  it("two picked runs open Compare", async () => {
    const user = userEvent.setup();
    stub(3);
    renderRuns("/runs");
    await screen.findByText("1–3 of 3");
    const compare = screen.queryByRole("button", { name: "Compare" });
    expect(compare).toBeNull();
    await user.click(screen.getByLabelText("Pick run 3 to compare"));
    expect(screen.getByRole<HTMLButtonElement>("button", { name: "Compare" }).disabled).toBe(true);
    await user.click(screen.getByLabelText("Pick run 1 to compare"));
    // a third cannot be picked while two are
    expect(screen.getByLabelText<HTMLInputElement>("Pick run 2 to compare").disabled).toBe(true);
    await user.click(screen.getByRole("button", { name: "Compare" }));
    expect(screen.getByTestId("where").textContent).toBe("/runs/compare?a=3&b=1");
  });

  it("offers every user as an owner to a researcher, page after page of the users list", async () => {
    const asked = stub(3, "researcher");
    renderRuns("/runs");
    const owner = await screen.findByLabelText<HTMLSelectElement>("Owner");
    await waitFor(() => expect(owner.options.length).toBe(2 + 229)); // everyone, me (user002 is rita), the rest
    expect(screen.getByRole("option", { name: "user230" })).toBeTruthy();
    const pages = asked.filter((u) => u.startsWith("/api/users?"));
    expect(pages.map((u) => new URLSearchParams(u.split("?")[1]).get("offset"))).toEqual(["0", "200"]);
  });

  it("shows no owner filter to a viewer, and asks nobody for the users", async () => {
    const asked = stub(3);
    renderRuns("/runs");
    await screen.findByText("1–3 of 3");
    expect(screen.queryByLabelText("Owner")).toBeNull();
    expect(asked.some((u) => u.startsWith("/api/users"))).toBe(false);
  });

  it("says so when there are no runs, with a way to submit", async () => {
    stub(0);
    renderRuns("/runs");
    expect(await screen.findByText("No runs yet")).toBeTruthy();
    expect(screen.getAllByRole("link", { name: "Submit a task" }).length).toBeGreaterThan(0);
  });
});

describe("Compare", () => {
  it("shows both runs and warns when their tasks differ", async () => {
    stub(0);
    renderRuns("/runs/compare?a=4&b=9");
    expect(await screen.findByText(/different tasks/)).toBeTruthy();
    expect(screen.getByText("answer 4")).toBeTruthy();
    expect(screen.getByText("answer 9")).toBeTruthy();
    expect(screen.getByRole("link", { name: "← Runs" })).toBeTruthy();
  });

  it("does not warn for two runs of the same task", async () => {
    stub(0);
    renderRuns("/runs/compare?a=4&b=5");
    await screen.findByText("answer 5");
    expect(screen.queryByText(/different tasks/)).toBeNull();
  });

  it("asks for two runs when the URL has none", async () => {
    stub(0);
    renderRuns("/runs/compare");
    expect(await screen.findByText("Pick two runs to compare")).toBeTruthy();
  });
});
