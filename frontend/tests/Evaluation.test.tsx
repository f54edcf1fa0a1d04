// A failed look at the evaluations heals by itself when the failure may pass (a busy or
// restarting server), and is not repeated when it cannot (a 4xx); a started evaluation
// shows at once.
import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, expect, it, vi } from "vitest";

import { ApiError, mayHeal, withFirst } from "../src/api/client";
import EvaluationPage from "../src/pages/Evaluation";
import { renderAt, reply, stubFetch } from "./support";

/** The list answers with `first` once, then with an empty page; returns how often it was asked. */
function stub(first: number) {
  const asked = { list: 0 };
  stubFetch(({ url }) => {
    if (url.startsWith("/api/evaluations/options")) {
      return reply(200, { presets: {}, outcomes: [], default_outcomes: ["llmrouter.jsonl.gz"], methods: [] });
    }
    if (url.startsWith("/api/evaluations?")) {
      asked.list += 1;
      return asked.list === 1 ? reply(first, { detail: `failed with ${first}` }) : reply(200, { items: [], count: 0 });
    }
    return reply(404, { detail: "not here" });
  });
  return asked;
}

function renderPage() {
  return renderAt("/evaluation", <EvaluationPage />);
}

afterEach(() => vi.unstubAllGlobals());

it("tells a failure that may pass from one that cannot", () => {
  expect(mayHeal(new ApiError(0, "unreachable"))).toBe(true);
  expect(mayHeal(new ApiError(503, "busy"))).toBe(true);
  expect(mayHeal(new TypeError("network"))).toBe(true);
  expect(mayHeal(new ApiError(403, "forbidden"))).toBe(false);
  expect(mayHeal(new ApiError(404, "gone"))).toBe(false);
  expect(mayHeal(null)).toBe(false);
});

it("looks again after a server failure and shows what it finds", async () => {
  const asked = stub(503);
  renderPage();
  expect(await screen.findByText(/The server failed \(503\)/)).toBeTruthy();
  expect(await screen.findByText("No evaluation yet", {}, { timeout: 4000 })).toBeTruthy();
  expect(screen.queryByText(/The server failed/)).toBeNull();
  expect(asked.list).toBeGreaterThanOrEqual(2);
});

it("does not ask again after a 4xx", async () => {
  const asked = stub(403);
  renderPage();
  expect(await screen.findByText("failed with 403")).toBeTruthy();
  await new Promise((resolve) => setTimeout(resolve, 2500));
  expect(asked.list).toBe(1);
});

it("puts a created entry first, once", () => {
  const a = { id: 1, name: "a" };
  const b = { id: 2, name: "b" };
  expect(withFirst(undefined, a)).toEqual({ items: [a], count: 1 });
  expect(withFirst({ items: [a], count: 40 }, b)).toEqual({ items: [b, a], count: 41 });
  expect(withFirst({ items: [b, a], count: 41 }, { ...b, name: "b2" })).toEqual({
    items: [{ id: 2, name: "b2" }, a],
    count: 41,
  });
});

it("shows a started evaluation at once, even while the server cannot list it", async () => {
  const created = {
    id: 7,
    status: "queued",
    progress: 0,
    message: "",
    config: { preset: "quick" },
    checkpoint_id: null,
    created_at: "2026-12-01T00:00:00Z",
    started_at: null,
    finished_at: null,
  };
  let posted = false;
  stubFetch(({ url, method }) => {
    if (url === "/api/auth/csrf") return reply(200, {});
    if (url.startsWith("/api/evaluations/options")) {
      return reply(200, { presets: {}, outcomes: [], default_outcomes: ["llmrouter.jsonl.gz"], methods: [] });
    }
    if (url === "/api/evaluations" && method === "POST") {
      posted = true;
      return reply(201, created);
    }
    if (url.startsWith("/api/evaluations")) return posted ? reply(503, {}) : reply(200, { items: [], count: 0 });
    return reply(404, { detail: "not here" });
  });
  renderPage();
  expect(await screen.findByText("No evaluation yet")).toBeTruthy();
  await userEvent.click(screen.getByRole("button", { name: "Start evaluation" }));
  const row = await screen.findByRole("row", { name: /#7 quick queued/ });
  expect(row.getAttribute("aria-selected") ?? row.className).toContain("selected");
  expect(screen.queryByText("No evaluation yet")).toBeNull();
});

it("tests on a chosen collection, and says where to make one when there is none", async () => {
  const bodies: unknown[] = [];
  let collections: unknown[] = [];
  stubFetch(({ url, method, body }) => {
    if (url === "/api/auth/csrf") return reply(200, {});
    if (url.startsWith("/api/evaluations/options")) {
      return reply(200, { presets: {}, outcomes: [], default_outcomes: ["llmrouter.jsonl.gz"], methods: [] });
    }
    if (url.startsWith("/api/collections?")) return reply(200, { items: collections, count: collections.length });
    if (url === "/api/evaluations" && method === "POST") {
      bodies.push(body);
      return reply(422, { detail: "stop here" });
    }
    if (url.startsWith("/api/evaluations")) return reply(200, { items: [], count: 0 });
    return reply(404, { detail: "not here" });
  });
  const { unmount } = renderPage();
  expect(await screen.findByText(/None has recorded outcomes yet/)).toBeTruthy();
  unmount();

  const cells = (recorded: number) => ({ total: 8, pending: 8 - recorded, started: 0, recorded, failed: 0 });
  collections = [
    { id: 5, name: "my probe", source: "collection-5", pool_name: "mine", cells: cells(8) },
    { id: 6, name: "", source: "collection-6", pool_name: "mine", cells: cells(0) },
  ];
  renderPage();
  const probe = await screen.findByRole("checkbox", { name: /#5 my probe/ });
  expect(screen.queryByRole("checkbox", { name: /#6/ })).toBeNull(); // nothing recorded: nothing to test on
  await userEvent.click(probe);
  await userEvent.click(screen.getByRole("button", { name: "Start evaluation" }));
  expect(await screen.findByText("stop here")).toBeTruthy();
  expect(bodies[0]).toMatchObject({ outcomes: [], collections: [5] });
});
