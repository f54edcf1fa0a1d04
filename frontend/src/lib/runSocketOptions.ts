// What a run's socket (lib/runSocket) is given and what it reports: its options, the parts a
// test replaces with fakes (the WebSocket, the network's online/offline events), its connection
// states and counters, and the delay before each reconnect.
import type { RunEventMessage } from "../api/events";
import type { EventPage } from "../api/types";
import type { RunDelta } from "./streaming";

/** A run event as the socket delivers it. */
export type SocketEvent = RunEventMessage;

export type ConnectionState =
  | "connecting" // first connection
  | "live" // open, receiving
  | "reconnecting" // closed unexpectedly, will try again
  | "offline" // the browser is offline; resumes when it is back
  | "ended" // the run has ended; no more reconnects
  | "refused" // the server refused (not signed in, not allowed)
  | "stopped"; // stop() was called

export interface SocketStats {
  lastSeq: number;
  duplicates: number;
  gapsFilled: number;
  connections: number;
}

/** The part of the browser's WebSocket the client uses (a fake can be injected in tests). */
export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason?: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(code?: number, reason?: string): void;
}

export type SocketFactory = new (url: string) => SocketLike;

/** Where `online` / `offline` events come from (the window, or a fake). */
export interface NetworkEvents {
  addEventListener(type: "online" | "offline", listener: () => void): void;
  removeEventListener(type: "online" | "offline", listener: () => void): void;
}

export interface RunSocketOptions {
  runId: number | string;
  /** Resume after this sequence number (0: every event from the start). */
  after?: number;
  /** Each event, once, in sequence order. */
  onEvent: (event: SocketEvent) => void;
  /** Each piece of a call's text as the model writes it (not an event: no seq, not replayed). */
  onDelta?: (delta: RunDelta) => void;
  onState?: (state: ConnectionState, stats: SocketStats) => void;
  /** An event that ends the run (default: type run.finished). */
  isEnd?: (event: SocketEvent) => boolean;
  /** An event that makes an ended run live again (default: a queued attempt, a re-run). */
  isReopen?: (event: SocketEvent) => boolean;
  WebSocket?: SocketFactory;
  url?: (after: number) => string;
  fetchEvents?: (after: number) => Promise<EventPage>;
  network?: NetworkEvents | null;
  /** Backoff: first delay and cap, in milliseconds. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

export function backoffDelay(failures: number, base: number, cap: number): number {
  return Math.min(cap, base * 2 ** Math.max(0, failures - 1));
}
