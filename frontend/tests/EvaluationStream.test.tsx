// An evaluation's progress comes over /ws/evaluations/<id>/ while it runs: the page moves
// with each message and does not poll; its end fetches the report; a lost socket falls
// back to polling.
import { act, screen, waitFor } from "@testing-library/react";

import { afterEach, beforeEach, expect, it, vi } from "vitest";

import EvaluationPage from "../src/pages/Evaluation";
import { withProgress } from "../src/pages/evaluation/useEvaluationStream";
import { renderAt, reply, stubFetch } from "./support";

class FakeSocket {
  static all: FakeSocket[] = [];
  onmessage: ((event: { data: string }) => void) | null = null;
  onclose: ((event: { code: number }) => void) | null = null;
  closed = false;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  send(message: object) {
    this.onmessage?.({ data: JSON.stringify({ kind: "progress", ...message }) });
  }
  drop() {
    act(() => this.onclose?.({ code: 1006 }));
  }
  close() {
    this.closed = true;
  }
}

const evaluation = (status: string, progress: number, message = "") => ({
  id: 3,
  status,
  progress,
  message,
  config: { preset: "quick" },
  checkpoint_id: null,
  created_at: "2026-12-01T00:00:00Z",
  started_at: "2026-12-01T00:00:01Z",
  finished_at: null,
});

function fakeServer() {
  const asked = { detail: 0 };
  let now = evaluation("running", 0.25, "random");
  stubFetch(({ url }) => {
    if (url.startsWith("/api/evaluations/options")) {
      return reply(200, { presets: {}, outcomes: [], default_outcomes: [], methods: [] });
    }
    if (url.startsWith("/api/evaluations?")) return reply(200, { items: [now], count: 1 });
    if (url === "/api/evaluations/3") {
      asked.detail += 1;
      return reply(200, { ...now, report: {} });
    }
    return reply(404, { detail: "not here" });
  });
  return { asked, finish: () => (now = evaluation("succeeded", 1, "done")) };
}

beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal("WebSocket", FakeSocket);
});
afterEach(() => vi.unstubAllGlobals());

const bar = () => screen.getByRole("progressbar", { name: "Evaluation progress" });

it("moves with each message over the socket, without asking the server again", async () => {
  const { asked, finish } = fakeServer();
  renderAt("/evaluation?id=3", <EvaluationPage />);
  await waitFor(() => expect(bar().getAttribute("aria-valuenow")).toBe("25"));
  const socket = FakeSocket.all.find((s) => s.url.endsWith("/ws/evaluations/3/"));
  expect(socket).toBeDefined();
  expect(screen.getByTestId("evaluation-progress").dataset.streamed).toBe("true");

  socket!.send({ id: 3, status: "running", progress: 0.5, message: "cheapest" });
  await waitFor(() => expect(bar().getAttribute("aria-valuenow")).toBe("50"));
  expect(screen.getByText(/50% · cheapest/)).toBeTruthy();
  socket!.send({ id: 3, status: "running", progress: 0.4, message: "late" }); // progress never moves back
  await waitFor(() => expect(screen.getByText(/50% · late/)).toBeTruthy());
  await new Promise((resolve) => setTimeout(resolve, 1800)); // longer than the fallback poll
  expect(asked.detail).toBe(1);

  finish();
  socket!.send({ id: 3, status: "succeeded", progress: 1, message: "done" });
  await waitFor(() => expect(screen.getByTestId("evaluation-status").dataset.status).toBe("succeeded"));
  await waitFor(() => expect(asked.detail).toBe(2)); // the end: read again, for the report
  expect(socket!.closed).toBe(true);
});

it("polls when its socket is lost", async () => {
  const { asked } = fakeServer();
  renderAt("/evaluation?id=3", <EvaluationPage />);
  await waitFor(() => expect(FakeSocket.all.length).toBeGreaterThan(0));
  FakeSocket.all[0].drop();
  await waitFor(() => expect(screen.getByTestId("evaluation-progress").dataset.streamed).toBe("false"));
  await waitFor(() => expect(asked.detail).toBeGreaterThanOrEqual(2), { timeout: 4000 });
});

it("applies a message to its own evaluation only", () => {
  const running = { ...evaluation("running", 0.2), report: {} };
  const message = { kind: "progress" as const, id: 3, status: "failed", progress: 0.1, message: "boom" };
  expect(withProgress(running, message)).toMatchObject({ status: "failed", progress: 0.2, message: "boom" });
  const other = { ...running, id: 4 };
  expect(withProgress(other, message)).toBe(other);
});
