// The reducer that folds a run's events (docs/runtime.md, studio/services/engine.py) into its
// tree: the snapshot from GET /api/runs/{id}/tree, with the events applied on top (lib/liveTree).
//
// Events the engine writes (payload fields in brackets):
//   run.created [task, policy]      run.started [policy, pool]
//   node.created [key, kind, text, depth, parent, depends_on, status, item_id]
//   node.<status> [key, answer?, reason?, ...]   (pending ready running answered succeeded failed skipped cancelled)
//   node.decomposed [key, subtasks]  node.noted [key, ...]
//   node.replanned [key, feedback, replans]  (its unfinished parts were cancelled; a new round follows)
//   attempt.queued [key, attempt, number, endpoint, primitive, repair?, rerun_by?]
//   attempt.finished [attempt, node, status, answer, tokens_in, tokens_out, cost_usd, latency_s, error_kind, error_message]
//   protocol.violation [action, reason, count]
//   run.finished [status, reason, answer?, verification?, tokens_in?, tokens_out?, cost_usd?, latency_s?]
//   run.verified [verification]     (a checker's verdict, after run.finished: studio/services/verification.py)
import type { Attempt, Tree, TreeNode } from "../api/types";
import { fromSnapshot, type LiveEvent, type LiveTree, type Totals } from "./liveTree";

export const NODE_STATUSES = [
  "pending",
  "ready",
  "running",
  "answered",
  "succeeded",
  "failed",
  "skipped",
  "cancelled",
] as const;
// The finished run statuses: orchestrator.core.state.RUN_ENDED (a test keeps the two equal).
export const RUN_ENDED = ["succeeded", "failed", "cancelled"];

const zero = (): Totals => ({ tokens_in: 0, tokens_out: 0, cost_usd: 0, latency_s: 0 });

function str(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}
function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

function newNode(payload: Record<string, unknown>): TreeNode {
  return {
    key: str(payload.key) ?? "?",
    kind: str(payload.kind) ?? "subtask",
    parent: str(payload.parent),
    depends_on: Array.isArray(payload.depends_on)
      ? payload.depends_on.filter((d): d is string => typeof d === "string")
      : [],
    text: str(payload.text) ?? "",
    status: str(payload.status) ?? "pending",
    depth: num(payload.depth) ?? 0,
    pair: null,
    model: null,
    endpoint_id: null,
    primitive: null,
    answer: "",
    output: "",
    verification: {},
    item_id: str(payload.item_id),
    best_of: null,
    replans: 0,
    replan_feedback: "",
    round: num(payload.round) ?? 0,
    tokens_in: 0,
    tokens_out: 0,
    cost_usd: 0,
    latency_s: 0,
    subtree: zero(),
    attempts: [],
  };
}

export interface ApplyOptions {
  /** endpoint id -> model name, to name the pair of a queued attempt before the tree is refetched. */
  models?: Record<number, string>;
}

/** The tree after one event. Events at or below `tree.seq` are already in it and change nothing. */
export function applyEvent(tree: LiveTree, event: LiveEvent, options: ApplyOptions = {}): LiveTree {
  if (event.seq <= tree.seq) return tree;
  const p = event.payload ?? {};
  const next: LiveTree = { ...tree, seq: event.seq };
  const index = new Map(tree.nodes.map((node, i) => [node.key, i]));
  const nodes = tree.nodes.slice();
  const patch = (key: string | null, change: (node: TreeNode) => TreeNode) => {
    if (key === null) return;
    const i = index.get(key);
    if (i === undefined) return;
    nodes[i] = change(nodes[i]);
    next.nodes = nodes;
  };
  const type = event.type;

  if (type === "run.started") {
    next.run = { ...tree.run, status: "running", started_at: tree.run.started_at ?? event.created_at ?? null };
  } else if (type === "run.finished") {
    const status = str(p.status) ?? "failed";
    next.run = {
      ...tree.run,
      status,
      end_reason: str(p.reason) ?? tree.run.end_reason,
      final_answer: str(p.answer) ?? tree.run.final_answer,
      verification: (p.verification as Record<string, unknown>) ?? tree.run.verification,
      tokens_in: num(p.tokens_in) ?? tree.run.tokens_in,
      tokens_out: num(p.tokens_out) ?? tree.run.tokens_out,
      cost_usd: num(p.cost_usd) ?? tree.run.cost_usd,
      latency_s: num(p.latency_s) ?? tree.run.latency_s,
      finished_at: event.created_at ?? tree.run.finished_at,
    };
    if (status === "cancelled") {
      // the cancel marks waiting nodes cancelled without an event each (services/runs.py)
      for (let i = 0; i < nodes.length; i++) {
        if (nodes[i].status === "pending" || nodes[i].status === "ready")
          nodes[i] = { ...nodes[i], status: "cancelled" };
      }
      next.nodes = nodes;
    }
  } else if (type === "run.verified") {
    next.run = { ...tree.run, verification: (p.verification as Record<string, unknown>) ?? tree.run.verification };
  } else if (type === "node.created") {
    const node = newNode(p);
    const i = index.get(node.key);
    if (i === undefined) nodes.push(node);
    else nodes[i] = { ...nodes[i], ...node, attempts: nodes[i].attempts };
    next.nodes = nodes;
  } else if (type === "node.decomposed") {
    patch(str(p.key), (node) => ({ ...node, status: "running" }));
  } else if (type === "node.replanned") {
    patch(str(p.key), (node) => ({
      ...node,
      replans: num(p.replans) ?? node.replans + 1,
      replan_feedback: str(p.feedback) ?? node.replan_feedback,
    }));
  } else if (type.startsWith("node.")) {
    const status = type.slice("node.".length);
    if ((NODE_STATUSES as readonly string[]).includes(status)) {
      patch(str(p.key), (node) => ({
        ...node,
        status,
        answer: str(p.answer) ?? node.answer,
        output:
          status === "failed" || status === "skipped" || status === "cancelled"
            ? (str(p.reason) ?? node.output)
            : node.output,
      }));
    }
  } else if (type === "attempt.queued") {
    const key = str(p.key);
    const number = num(p.number) ?? 0;
    const endpoint = num(p.endpoint);
    const primitive = str(p.primitive) ?? "";
    const model = endpoint !== null ? (options.models?.[endpoint] ?? `endpoint ${endpoint}`) : "";
    const id = num(p.attempt);
    if (key !== null && id !== null) next.attemptIds = { ...tree.attemptIds, [String(id)]: { key, number } };
    patch(key, (node) => {
      const attempt: Attempt = {
        number,
        model,
        primitive,
        status: "queued",
        answer: null,
        tokens_in: 0,
        tokens_out: 0,
        cost_usd: 0,
        latency_s: 0,
        error_kind: null,
        error_message: null,
      };
      const attempts = node.attempts.filter((a) => a.number !== number).concat(attempt);
      const pair = primitive === "plan" ? {} : { endpoint_id: endpoint, model: model || node.model, primitive };
      return { ...node, ...pair, status: "running", attempts };
    });
  } else if (type === "attempt.finished") {
    const key = str(p.node);
    const where = tree.attemptIds[String(num(p.attempt))];
    const add: Totals = {
      tokens_in: num(p.tokens_in) ?? 0,
      tokens_out: num(p.tokens_out) ?? 0,
      cost_usd: num(p.cost_usd) ?? 0,
      latency_s: num(p.latency_s) ?? 0,
    };
    patch(key, (node) => {
      const open = node.attempts.filter((a) => a.status === "queued" || a.status === "running");
      const number = where?.key === node.key ? where.number : open[open.length - 1]?.number;
      const attempts = node.attempts.map((a) =>
        a.number === number
          ? {
              ...a,
              status: str(p.status) ?? a.status,
              answer: str(p.answer),
              ...add,
              error_kind: str(p.error_kind),
              error_message: str(p.error_message),
            }
          : a,
      );
      return {
        ...node,
        attempts,
        tokens_in: node.tokens_in + add.tokens_in,
        tokens_out: node.tokens_out + add.tokens_out,
        cost_usd: node.cost_usd + add.cost_usd,
        latency_s: node.latency_s + add.latency_s,
      };
    });
    // roll the totals up: the node and each ancestor
    let at = key;
    const seen = new Set<string>();
    while (at !== null && !seen.has(at)) {
      seen.add(at);
      const i = index.get(at);
      if (i === undefined) break;
      const s = nodes[i].subtree;
      nodes[i] = {
        ...nodes[i],
        subtree: {
          tokens_in: s.tokens_in + add.tokens_in,
          tokens_out: s.tokens_out + add.tokens_out,
          cost_usd: s.cost_usd + add.cost_usd,
          latency_s: s.latency_s + add.latency_s,
        },
      };
      at = nodes[i].parent;
    }
    next.nodes = nodes;
    next.run = {
      ...tree.run,
      tokens_in: tree.run.tokens_in + add.tokens_in,
      tokens_out: tree.run.tokens_out + add.tokens_out,
      cost_usd: tree.run.cost_usd + add.cost_usd,
      latency_s: tree.run.latency_s + add.latency_s,
    };
  }
  next.run = { ...next.run, last_seq: Math.max(next.run.last_seq, event.seq) };
  return next;
}

/** Apply events in order. */
export function applyEvents(tree: LiveTree, events: LiveEvent[], options: ApplyOptions = {}): LiveTree {
  return events.reduce((acc, event) => applyEvent(acc, event, options), tree);
}

/** A fresh snapshot, with the events received since it was taken applied again on top. */
export function rebase(snapshot: Tree, log: LiveEvent[], options: ApplyOptions = {}): LiveTree {
  const base = fromSnapshot(snapshot);
  return applyEvents(
    base,
    log.filter((e) => e.seq > base.seq),
    options,
  );
}
