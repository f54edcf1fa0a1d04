// useLiveRun: the snapshot, then the run's events over its socket applied on top; a gap is
// filled from the events endpoint before anything later; the pool's endpoints name a
// queued attempt's model; the run's end refetches the snapshot soon.
import { act, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, expect, it, vi } from "vitest";

import type { RunEventMessage } from "../src/api/events";
import { emptyTree } from "../src/lib/liveTree";
import { useLiveRun } from "../src/pages/liveRun/useLiveRun";
import { renderAt, reply, stubFetch } from "./support";

class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  close() {}
  send(event: RunEventMessage) {
    act(() => this.onmessage?.({ data: JSON.stringify(event) }));
  }
}

const at = "2026-01-01T00:00:00Z";
const NODE = {
  key: "root",
  kind: "root",
  text: "6*7?",
  depth: 0,
  parent: null,
  depends_on: [],
  status: "ready",
  item_id: null,
};
// As the events endpoint gives it: the socket's message without `kind`.
const QUEUED = {
  seq: 3,
  type: "attempt.queued" as const,
  payload: { key: "root", attempt: 9, number: 1, endpoint: 4, primitive: "cot" },
  created_at: at,
};
const EVENTS: RunEventMessage[] = [
  { kind: "event", seq: 1, type: "run.started", payload: { policy: "default", pool: 1 }, created_at: at },
  { kind: "event", seq: 2, type: "node.created", payload: NODE, created_at: at },
  { kind: "event", ...QUEUED },
  {
    kind: "event",
    seq: 4,
    type: "run.finished",
    payload: { status: "succeeded", reason: "done", answer: "42", verification: { correct: true } },
    created_at: at,
  },
];

function fakeServer() {
  const asked = { tree: 0, events: [] as string[] };
  const snapshot = { run: { ...emptyTree({ id: 5, status: "pending", pool_id: 1 }).run }, nodes: [] };
  stubFetch(({ url }) => {
    if (url === "/api/runs/5/tree") {
      asked.tree += 1;
      return reply(200, snapshot);
    }
    if (url.startsWith("/api/pools/1/endpoints?")) {
      return reply(200, { items: [{ id: 4, model: "openai/gpt-4o", enabled: true }], count: 1 });
    }
    if (url.startsWith("/api/runs/5/events?")) {
      asked.events.push(url);
      return reply(200, { items: [QUEUED], next_after: null });
    }
    return reply(404, { detail: `unexpected ${url}` });
  });
  return asked;
}

function Probe() {
  const live = useLiveRun(5);
  const node = live.tree?.nodes[0];
  return (
    <output data-testid="probe">
      {JSON.stringify({
        status: live.tree?.run.status,
        answer: live.tree?.run.final_answer,
        node: node && `${node.key}:${node.status}:${node.model}`,
        seqs: live.log.map((event) => event.seq),
        gapsFilled: live.stats?.gapsFilled,
      })}
    </output>
  );
}

const probe = () => JSON.parse(screen.getByTestId("probe").textContent ?? "{}") as Record<string, unknown>;

beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal("WebSocket", FakeSocket);
});
afterEach(() => vi.unstubAllGlobals());

it("folds the socket's events into the snapshot, fills a gap, and refetches at the end", async () => {
  const asked = fakeServer();
  renderAt("/runs/5", <Probe />);
  await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
  const socket = FakeSocket.all[0];
  expect(socket.url).toMatch(/\/ws\/runs\/5\/\?after=0$/); // every event, for the event log
  act(() => socket.onopen?.({}));
  await waitFor(() => expect(probe().status).toBe("pending"));

  socket.send(EVENTS[0]);
  socket.send(EVENTS[1]);
  await waitFor(() => expect(probe()).toMatchObject({ status: "running", node: "root:ready:null", seqs: [1, 2] }));

  socket.send(EVENTS[3]); // #3 missed: filled from the events endpoint first
  await waitFor(() => expect(probe().seqs).toEqual([1, 2, 3, 4]));
  expect(asked.events).toEqual(["/api/runs/5/events?after=2&limit=1000"]);
  expect(probe()).toMatchObject({
    status: "succeeded",
    answer: "42",
    node: "root:running:openai/gpt-4o",
    gapsFilled: 1,
  });

  const before = asked.tree;
  await waitFor(() => expect(asked.tree).toBe(before + 1)); // run.finished: the snapshot again, soon
});
