// A run's tree as the page holds it: the API's snapshot (GET /api/runs/{id}/tree) with the
// bookkeeping for applying the run's events (lib/eventTree applies them), and the trees to start from.
import type { Run, Tree, TreeNode } from "../api/types";

export interface LiveEvent {
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  created_at?: string;
}

export type Totals = TreeNode["subtree"];

/** The tree as the page shows it: the API's shape, plus bookkeeping for applying events. */
export interface LiveTree extends Tree {
  /** The greatest event sequence number folded in (the snapshot's run.last_seq, then each event). */
  seq: number;
  /** attempt id (the events' `attempt`) -> where that attempt sits. */
  attemptIds: Record<string, { key: string; number: number }>;
}

/** The live tree of a snapshot. */
export function fromSnapshot(tree: Tree): LiveTree {
  return { run: tree.run, nodes: tree.nodes, seq: tree.run.last_seq, attemptIds: {} };
}

/** An empty tree for a run known only by its events (tests, or before the snapshot). */
export function emptyTree(run: Partial<Run> & { id: number }): LiveTree {
  const base: Run = {
    task_id: 0,
    task_text: "",
    owner_id: 0,
    owner: "",
    pool_id: null,
    policy: "",
    checkpoint_id: null,
    status: "pending",
    end_reason: "",
    cost_preference: null,
    best_of: 1,
    max_cost_usd: null,
    max_nodes: null,
    max_depth: null,
    deadline_s: null,
    tokens_in: 0,
    tokens_out: 0,
    cost_usd: 0,
    latency_s: 0,
    final_answer: "",
    verification: {},
    last_seq: 0,
    created_at: "",
    started_at: null,
    finished_at: null,
    ...run,
  };
  return { run: base, nodes: [], seq: 0, attemptIds: {} };
}
