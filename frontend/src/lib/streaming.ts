// A call's text as the model writes it: the `kind: "delta"` messages of /ws/runs/<id>/
// (studio/streaming.py), kept per node until the node's own events carry its output.
import type { components } from "../api/messages";
import type { LiveTree } from "./liveTree";

export type RunDelta = components["schemas"]["RunDelta"];

/** node key -> the text of its latest streamed attempt so far, from character `start` on (a
 * socket that joined mid-call holds what came after it joined). */
export type Streamed = Record<string, { attempt: number; start: number; text: string }>;

/** Fold in one delta. A piece that does not follow the text held (a message lost) is dropped:
 * the node's events carry its whole output when the attempt ends. */
export function appendDelta(streamed: Streamed, delta: RunDelta): Streamed {
  const held = streamed[delta.node];
  if (held && held.attempt === delta.attempt) {
    if (delta.offset !== held.start + held.text.length) return streamed;
    return { ...streamed, [delta.node]: { ...held, text: held.text + delta.text } };
  }
  if (held && held.attempt > delta.attempt) return streamed; // an older attempt's late piece
  return { ...streamed, [delta.node]: { attempt: delta.attempt, start: delta.offset, text: delta.text } };
}

/** What a node shows while its model writes: the text held, after "…" if it began mid-call. */
export function shown(held: Streamed[string]): string {
  return held.start > 0 ? `…${held.text}` : held.text;
}

/** Forget a node's text once its events say the attempt ended (they carry the output). */
export function forget(streamed: Streamed, key: string): Streamed {
  if (!(key in streamed)) return streamed;
  const rest = { ...streamed };
  delete rest[key];
  return rest;
}

/** The tree with each node that is still working showing the text streamed so far as its output. */
export function withStreaming(tree: LiveTree, streamed: Streamed): LiveTree {
  if (Object.keys(streamed).length === 0) return tree;
  const nodes = tree.nodes.map((node) => {
    const held = streamed[node.key];
    const working = node.status === "running" || node.status === "ready";
    return held && working ? { ...node, output: shown(held) } : node;
  });
  return { ...tree, nodes };
}
