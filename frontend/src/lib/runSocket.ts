// The run's WebSocket, kept alive: `/ws/runs/{id}/?after=SEQ` (studio/consumers.py).
//
// - It remembers the last sequence number applied, and every (re)connection resumes
//   with ?after=that number, so the server replays exactly what was missed.
// - Events are applied once each and in order: a duplicate (seq <= last) is dropped; a
//   gap (seq > last + 1) is filled from GET /api/runs/{id}/events?after=last before
//   anything later is applied.
// - A closed socket reconnects with exponential backoff; the window's `offline` event
//   closes it and waits, `online` reconnects at once.
// - After `run.finished` it no longer reconnects (a later `attempt.queued`, i.e. a
//   re-run, makes the run live again); stop() ends it for good (unmount).
import { api, query, wsUrl } from "../api/client";
import type { EventPage } from "../api/types";
import {
  backoffDelay,
  type ConnectionState,
  type RunSocketOptions,
  type SocketEvent,
  type SocketFactory,
  type SocketLike,
} from "./runSocketOptions";
import type { RunDelta } from "./streaming";

const CLOSE_UNAUTHENTICATED = 4401;
const CLOSE_FORBIDDEN = 4403;

export class RunSocket {
  private readonly options: Required<Omit<RunSocketOptions, "onState" | "network" | "onDelta">> &
    Pick<RunSocketOptions, "onState" | "network" | "onDelta">;
  private socket: SocketLike | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  private queue: SocketEvent[] = [];
  private draining = false;
  private offline = false;
  private stopped = false;
  private ended = false;
  private started = false;
  private opened = false;
  private _state: ConnectionState = "connecting";
  private _lastSeq: number;
  private stats = { duplicates: 0, gapsFilled: 0, connections: 0 };

  constructor(options: RunSocketOptions) {
    const runId = options.runId;
    this.options = {
      after: 0,
      isEnd: (event) => event.type === "run.finished",
      isReopen: (event) => event.type === "attempt.queued",
      WebSocket: (globalThis as unknown as { WebSocket: SocketFactory }).WebSocket,
      url: (after) => wsUrl(`/ws/runs/${runId}/${query({ after })}`),
      fetchEvents: (after) => api<EventPage>(`/api/runs/${runId}/events${query({ after, limit: 1000 })}`),
      backoffMs: 500,
      maxBackoffMs: 10_000,
      ...options,
      network: options.network === undefined ? (typeof window !== "undefined" ? window : null) : options.network,
    };
    this._lastSeq = this.options.after;
  }

  get lastSeq(): number {
    return this._lastSeq;
  }

  get state(): ConnectionState {
    return this._state;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.options.network?.addEventListener("offline", this.handleOffline);
    this.options.network?.addEventListener("online", this.handleOnline);
    this.connect();
  }

  /** For good: no more events, no reconnects (the page unmounts). */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.options.network?.removeEventListener("offline", this.handleOffline);
    this.options.network?.removeEventListener("online", this.handleOnline);
    this.clearTimer();
    this.dropSocket();
    this.queue = [];
    this.setState("stopped");
  }

  /** The run was made live again from this page (a re-run): listen again if the socket is gone. */
  resume(): void {
    if (this.stopped) return;
    this.ended = false;
    if (!this.socket && !this.offline) {
      this.failures = 0;
      this.connect();
    } else if (this.socket && this.opened) {
      this.setState("live");
    }
  }

  private setState(state: ConnectionState): void {
    this._state = state;
    this.options.onState?.(state, { lastSeq: this._lastSeq, ...this.stats });
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private dropSocket(): void {
    const socket = this.socket;
    this.socket = null;
    this.opened = false;
    if (!socket) return;
    socket.onopen = socket.onmessage = socket.onerror = socket.onclose = null;
    try {
      socket.close(1000, "client closed");
    } catch {
      // already closed
    }
  }

  private connect(): void {
    if (this.stopped || this.offline) return;
    this.clearTimer();
    this.dropSocket();
    this.setState(this.stats.connections === 0 && this.failures === 0 ? "connecting" : "reconnecting");
    let socket: SocketLike;
    try {
      socket = new this.options.WebSocket(this.options.url(this._lastSeq));
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    this.stats.connections += 1;
    socket.onopen = () => {
      if (this.socket !== socket) return;
      this.opened = true;
      this.failures = 0;
      this.setState(this.ended ? "ended" : "live");
    };
    socket.onmessage = (message) => {
      if (this.socket !== socket) return;
      let data: unknown;
      try {
        data = typeof message.data === "string" ? JSON.parse(message.data) : message.data;
      } catch {
        return;
      }
      const delta = data as RunDelta | null;
      if (delta?.kind === "delta") {
        this.options.onDelta?.(delta);
        return;
      }
      const event = data as SocketEvent;
      if (!event || event.kind !== "event" || typeof event.seq !== "number") return;
      this.queue.push(event);
      void this.drain();
    };
    socket.onerror = () => {
      // a close follows; it decides
    };
    socket.onclose = (close) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.opened = false;
      if (this.stopped) return;
      if (close.code === CLOSE_UNAUTHENTICATED || close.code === CLOSE_FORBIDDEN) {
        this.setState("refused");
        return;
      }
      if (this.ended) {
        this.setState("ended");
        return;
      }
      if (this.offline) {
        this.setState("offline");
        return;
      }
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.ended || this.offline) return;
    this.failures += 1;
    this.setState("reconnecting");
    this.clearTimer();
    const delay = backoffDelay(this.failures, this.options.backoffMs, this.options.maxBackoffMs);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }

  private readonly handleOffline = (): void => {
    if (this.stopped) return;
    this.offline = true;
    this.clearTimer();
    this.dropSocket();
    this.setState(this.ended ? "ended" : "offline");
  };

  private readonly handleOnline = (): void => {
    if (this.stopped) return;
    this.offline = false;
    if (this.ended) return;
    this.failures = 0;
    this.connect();
  };

  private apply(event: SocketEvent): void {
    this._lastSeq = event.seq;
    this.options.onEvent(event);
    if (this.options.isEnd(event)) {
      this.ended = true;
      this.clearTimer();
      this.setState("ended");
    } else if (this.ended && this.options.isReopen(event)) {
      this.ended = false;
      this.setState(this.socket && this.opened ? "live" : "reconnecting");
      if (!this.socket && !this.offline) this.connect();
    }
  }

  /** Fill the gap up to (not including) `before` from the REST endpoint. */
  private async fill(before: number): Promise<void> {
    let after = this._lastSeq;
    while (this._lastSeq < before - 1) {
      const page = await this.options.fetchEvents(after);
      if (this.stopped) return;
      for (const item of page.items) {
        if (item.seq <= this._lastSeq) continue;
        if (item.seq !== this._lastSeq + 1 || item.seq >= before) break;
        // the REST endpoint's events are the socket's messages without `kind` (studio/event_schemas.py)
        this.apply({ kind: "event", ...item } as SocketEvent);
      }
      if (page.next_after === null || page.next_after === undefined || page.items.length === 0) return;
      after = page.next_after;
    }
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0 && !this.stopped) {
        const event = this.queue.shift()!;
        if (event.seq <= this._lastSeq) {
          this.stats.duplicates += 1;
          continue;
        }
        if (event.seq > this._lastSeq + 1) {
          try {
            await this.fill(event.seq);
          } catch {
            // cannot fill it now: start over from the last applied event
          }
          if (this.stopped) return;
          if (event.seq > this._lastSeq + 1) {
            this.queue = [];
            this.dropSocket();
            this.scheduleReconnect();
            return;
          }
          this.stats.gapsFilled += 1;
          if (event.seq <= this._lastSeq) {
            this.stats.duplicates += 1;
            continue;
          }
        }
        this.apply(event);
      }
    } finally {
      this.draining = false;
    }
  }
}
