// The run's events as they arrived, with what the socket did to keep them whole.
import { useState } from "react";

import type { RunEventMessage } from "../../api/events";
import { Scrollable } from "../../components/Scrollable";
import type { SocketStats } from "../../lib/runSocketOptions";

/** One line about an event: the node it is about, and what happened. */
export function eventSummary(event: RunEventMessage): string {
  const cut = (text: string | null | undefined) => (text ? text.slice(0, 80) : null);
  let bits: (string | null | undefined)[] = [];
  switch (event.type) {
    case "run.created":
    case "run.started":
      bits = [event.payload.policy];
      break;
    case "run.finished":
      bits = [event.payload.status, cut(event.payload.reason)];
      break;
    case "run.verified":
      bits = [
        typeof event.payload.verification.correct === "boolean"
          ? event.payload.verification.correct
            ? "correct"
            : "not correct"
          : null,
      ];
      break;
    case "node.created":
    case "node.decomposed":
    case "node.noted":
      bits = [event.payload.key];
      break;
    case "node.replanned":
      bits = [event.payload.key, cut(event.payload.feedback)];
      break;
    case "attempt.queued":
      bits = [event.payload.key, event.payload.primitive];
      break;
    case "attempt.finished":
      bits = [event.payload.node, event.payload.status];
      break;
    case "protocol.violation":
      bits = [cut(event.payload.reason)];
      break;
    default:
      // node.<status>
      bits = [event.payload.key, cut(event.payload.reason)];
  }
  return bits.filter(Boolean).join(" · ");
}

function statsText(count: number, stats: SocketStats | null): string {
  const parts = [`${count} events`];
  if (stats) parts.push(`up to #${stats.lastSeq}`);
  if (stats && stats.duplicates > 0) parts.push(`${stats.duplicates} duplicates dropped`);
  if (stats && stats.gapsFilled > 0) parts.push(`${stats.gapsFilled} gaps filled`);
  if (stats && stats.connections > 1) parts.push(`${stats.connections - 1} reconnects`);
  return `(${parts.join(", ")})`;
}

export function EventLog({ log, stats }: { log: RunEventMessage[]; stats: SocketStats | null }) {
  const [open, setOpen] = useState(false);
  return (
    <details className="panel liverun-log" onToggle={(event) => setOpen(event.currentTarget.open)}>
      <summary>
        Event log <span className="muted small">{statsText(log.length, stats)}</span>
      </summary>
      <Scrollable className="event-log-scroll" label="Events" followEnd={open ? log.length : undefined}>
        <ol className="event-log" data-testid="event-log">
          {log.map((event) => (
            <li key={event.seq} data-seq={event.seq}>
              <span className="seq mono">#{event.seq}</span>
              <span className="type mono">{event.type}</span>
              <span className="what">{eventSummary(event)}</span>
              <time className="muted" dateTime={event.created_at}>
                {event.created_at ? new Date(event.created_at).toLocaleTimeString() : ""}
              </time>
            </li>
          ))}
        </ol>
      </Scrollable>
    </details>
  );
}
