import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import type { RunEventMessage } from "../src/api/events";
import type { EventPage } from "../src/api/types";
import { RunSocket } from "../src/lib/runSocket";
import { backoffDelay, type ConnectionState, type SocketLike } from "../src/lib/runSocketOptions";

class FakeSocket implements SocketLike {
  static all: FakeSocket[] = [];
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason?: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  closed = false;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  close() {
    this.closed = true;
  }
  // server side
  open() {
    this.onopen?.({});
  }
  send(seq: number, type = "node.created") {
    this.onmessage?.({ data: JSON.stringify(ev(seq, type)) });
  }
  drop(code = 1006) {
    this.closed = true;
    this.onclose?.({ code });
  }
  static last(): FakeSocket {
    return FakeSocket.all[FakeSocket.all.length - 1];
  }
}

/** An event whose payload does not matter here: the socket only orders and counts them. */
function ev(seq: number, type = "node.created"): RunEventMessage {
  return {
    kind: "event",
    seq,
    type,
    payload: { key: `n${seq}` },
    created_at: "2026-01-01T00:00:00Z",
  } as RunEventMessage;
}

class FakeNetwork {
  listeners: Record<string, Set<() => void>> = { online: new Set(), offline: new Set() };
  addEventListener(type: "online" | "offline", fn: () => void) {
    this.listeners[type].add(fn);
  }
  removeEventListener(type: "online" | "offline", fn: () => void) {
    this.listeners[type].delete(fn);
  }
  fire(type: "online" | "offline") {
    for (const fn of this.listeners[type]) fn();
  }
}

function setup(extra: { after?: number; fetchEvents?: (after: number) => Promise<EventPage> } = {}) {
  const seen: number[] = [];
  const states: ConnectionState[] = [];
  const network = new FakeNetwork();
  const fetchEvents = vi.fn(extra.fetchEvents ?? (() => Promise.resolve({ items: [], next_after: null })));
  const client = new RunSocket({
    runId: 7,
    after: extra.after ?? 0,
    onEvent: (e) => seen.push(e.seq),
    onState: (s) => states.push(s),
    WebSocket: FakeSocket,
    url: (after) => `ws://test/ws/runs/7/?after=${after}`,
    fetchEvents,
    network,
    backoffMs: 100,
    maxBackoffMs: 1000,
  });
  return { client, seen, states, network, fetchEvents };
}

// let pending promise callbacks (the gap fill) run
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

beforeEach(() => {
  FakeSocket.all = [];
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("RunSocket", () => {
  it("connects with after= the starting sequence and goes live", () => {
    const { client, states } = setup({ after: 5 });
    client.start();
    expect(FakeSocket.all).toHaveLength(1);
    expect(FakeSocket.last().url).toBe("ws://test/ws/runs/7/?after=5");
    FakeSocket.last().open();
    expect(client.state).toBe("live");
    expect(states).toEqual(["connecting", "live"]);
    client.stop();
  });

  it("applies events in order and drops duplicates", async () => {
    const { client, seen } = setup();
    client.start();
    const s = FakeSocket.last();
    s.open();
    s.send(1);
    s.send(2);
    s.send(2);
    s.send(1);
    s.send(3);
    await flush();
    expect(seen).toEqual([1, 2, 3]);
    expect(client.lastSeq).toBe(3);
    client.stop();
  });

  it("reconnects with backoff and resumes after the last sequence number", async () => {
    const { client, seen, states } = setup();
    client.start();
    FakeSocket.last().open();
    FakeSocket.last().send(1);
    FakeSocket.last().send(2);
    await flush();
    FakeSocket.last().drop();
    expect(client.state).toBe("reconnecting");
    expect(FakeSocket.all).toHaveLength(1); // not at once: after the backoff
    vi.advanceTimersByTime(99);
    expect(FakeSocket.all).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(FakeSocket.all).toHaveLength(2);
    expect(FakeSocket.last().url).toBe("ws://test/ws/runs/7/?after=2");
    // the first retry fails too: the next waits twice as long
    FakeSocket.last().drop();
    vi.advanceTimersByTime(199);
    expect(FakeSocket.all).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(FakeSocket.all).toHaveLength(3);
    expect(FakeSocket.last().url).toBe("ws://test/ws/runs/7/?after=2");
    // the server replays from after=2, plus an overlap it should not have sent
    const s = FakeSocket.last();
    s.open();
    s.send(2);
    s.send(3);
    s.send(4);
    await flush();
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(states).toContain("reconnecting");
    expect(client.state).toBe("live");
    client.stop();
  });

  it("fills a gap from the REST endpoint before applying later events", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { client, seen, fetchEvents } = setup({
      fetchEvents: async (after) => {
        await gate;
        const items = [3, 4, 5]
          .filter((n) => n > after)
          .map((n) => {
            const { kind: _kind, ...rest } = ev(n);
            void _kind;
            return rest;
          });
        return { items, next_after: null };
      },
    });
    client.start();
    const s = FakeSocket.last();
    s.open();
    s.send(1);
    s.send(2);
    s.send(6); // 3, 4, 5 are missing
    s.send(7); // arrives while the gap is being filled
    await flush();
    expect(fetchEvents).toHaveBeenCalledWith(2);
    expect(seen).toEqual([1, 2]); // nothing after the gap until it is filled
    release();
    await flush();
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);
    client.stop();
  });

  it("follows next_after to fill a gap larger than one page", async () => {
    const { client, seen, fetchEvents } = setup({
      fetchEvents: (after) => {
        const items = [after + 1, after + 2].filter((n) => n < 9).map((n) => ({ ...ev(n), kind: undefined }));
        return Promise.resolve({ items, next_after: items.length === 2 ? after + 2 : null });
      },
    });
    client.start();
    FakeSocket.last().open();
    FakeSocket.last().send(1);
    FakeSocket.last().send(9);
    await flush();
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(fetchEvents.mock.calls.map((c) => c[0])).toEqual([1, 3, 5, 7]);
    client.stop();
  });

  it("reconnects from the last applied event if the gap cannot be filled", async () => {
    const { client, seen } = setup({
      fetchEvents: () => Promise.reject(new Error("network")),
    });
    client.start();
    FakeSocket.last().open();
    FakeSocket.last().send(1);
    FakeSocket.last().send(4);
    await flush();
    expect(seen).toEqual([1]);
    expect(FakeSocket.all[0].closed).toBe(true);
    vi.advanceTimersByTime(100);
    expect(FakeSocket.all).toHaveLength(2);
    expect(FakeSocket.last().url).toContain("after=1");
    client.stop();
  });

  it("closes when the browser goes offline and reconnects at once when it is back", async () => {
    const { client, seen, network } = setup();
    client.start();
    FakeSocket.last().open();
    FakeSocket.last().send(1);
    FakeSocket.last().send(2);
    await flush();
    network.fire("offline");
    expect(client.state).toBe("offline");
    expect(FakeSocket.all[0].closed).toBe(true);
    vi.advanceTimersByTime(60_000);
    expect(FakeSocket.all).toHaveLength(1); // no retries while offline
    network.fire("online");
    expect(FakeSocket.all).toHaveLength(2); // at once, no backoff
    expect(FakeSocket.last().url).toBe("ws://test/ws/runs/7/?after=2");
    FakeSocket.last().open();
    FakeSocket.last().send(3);
    await flush();
    expect(seen).toEqual([1, 2, 3]);
    expect(client.state).toBe("live");
    client.stop();
  });

  it("ignores messages from a socket it has replaced", async () => {
    const { client, seen, network } = setup();
    client.start();
    const old = FakeSocket.last();
    old.open();
    old.send(1);
    network.fire("offline");
    network.fire("online");
    old.send(2); // a late message from the closed socket
    await flush();
    expect(seen).toEqual([1]);
    client.stop();
  });

  it("does not reconnect once the run has ended", async () => {
    const { client, seen, network } = setup();
    client.start();
    FakeSocket.last().open();
    FakeSocket.last().send(1, "run.started");
    FakeSocket.last().send(2, "run.finished");
    await flush();
    expect(client.state).toBe("ended");
    FakeSocket.last().drop();
    vi.advanceTimersByTime(60_000);
    network.fire("offline");
    network.fire("online");
    vi.advanceTimersByTime(60_000);
    expect(FakeSocket.all).toHaveLength(1);
    expect(client.state).toBe("ended");
    expect(seen).toEqual([1, 2]);
    client.stop();
  });

  it("listens again after a re-run reopens an ended run", async () => {
    const { client, seen } = setup();
    client.start();
    FakeSocket.last().open();
    FakeSocket.last().send(1, "run.finished");
    await flush();
    FakeSocket.last().drop();
    expect(client.state).toBe("ended");
    client.resume();
    expect(FakeSocket.all).toHaveLength(2);
    expect(FakeSocket.last().url).toContain("after=1");
    FakeSocket.last().open();
    FakeSocket.last().send(2, "attempt.queued");
    await flush();
    expect(client.state).toBe("live");
    expect(seen).toEqual([1, 2]);
    client.stop();
  });

  it("stops for good on stop(): no reconnect, no events, no listeners", async () => {
    const { client, seen, network } = setup();
    client.start();
    const s = FakeSocket.last();
    s.open();
    client.stop();
    expect(s.closed).toBe(true);
    s.send(1);
    s.drop();
    network.fire("online");
    vi.advanceTimersByTime(60_000);
    await flush();
    expect(FakeSocket.all).toHaveLength(1);
    expect(seen).toEqual([]);
    expect(network.listeners.online.size).toBe(0);
    expect(network.listeners.offline.size).toBe(0);
  });

  it("does not retry a refused connection", () => {
    const { client } = setup();
    client.start();
    FakeSocket.last().drop(4403);
    vi.advanceTimersByTime(60_000);
    expect(FakeSocket.all).toHaveLength(1);
    expect(client.state).toBe("refused");
    client.stop();
  });

  it("caps the backoff", () => {
    expect(backoffDelay(1, 500, 10_000)).toBe(500);
    expect(backoffDelay(2, 500, 10_000)).toBe(1000);
    expect(backoffDelay(10, 500, 10_000)).toBe(10_000);
  });
});

describe("deltas", () => {
  it("hands a call's text to onDelta, apart from the events and their order", () => {
    const deltas: string[] = [];
    const seen: number[] = [];
    const client = new RunSocket({
      runId: 7,
      onEvent: (e) => seen.push(e.seq),
      onDelta: (d) => deltas.push(`${d.node}@${d.offset}:${d.text}`),
      WebSocket: FakeSocket,
      url: () => "ws://test/ws/runs/7/?after=0",
      fetchEvents: () => Promise.resolve({ items: [], next_after: null }),
      network: null,
    });
    client.start();
    const socket = FakeSocket.last();
    socket.open();
    socket.send(1);
    const piece = { kind: "delta", node: "root", attempt: 1, primitive: "direct", offset: 0, text: "Hi" };
    socket.onmessage?.({ data: JSON.stringify(piece) });
    socket.send(2);
    expect(deltas).toEqual(["root@0:Hi"]);
    expect(seen).toEqual([1, 2]);
    expect(client.lastSeq).toBe(2);
    client.stop();
  });
});
