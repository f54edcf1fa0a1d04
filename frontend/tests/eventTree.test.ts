import { describe, expect, it } from "vitest";

import type { Tree } from "../src/api/types";
import { questionOf } from "../src/lib/format";
import { applyEvents, rebase } from "../src/lib/eventTree";
import { emptyTree, type LiveEvent } from "../src/lib/liveTree";
import { childrenOf, layoutTree, type Placed } from "../src/lib/treeLayout";

let seq = 0;
const e = (type: string, payload: Record<string, unknown>): LiveEvent => ({
  seq: ++seq,
  type,
  payload,
  created_at: "2026-01-01T00:00:00Z",
});

/** The events of a real composite run (replay pool), as the engine writes them. */
function compositeRun(): LiveEvent[] {
  seq = 0;
  return [
    e("run.created", { task: 4, policy: "default" }),
    e("run.started", { pool: 1, policy: "default" }),
    e("node.created", {
      key: "root",
      kind: "root",
      text: "Answer each part",
      depth: 0,
      parent: null,
      status: "ready",
      item_id: null,
      depends_on: [],
    }),
    e("node.decomposed", { key: "root", subtasks: [] }),
    e("node.created", {
      key: "root.item1",
      kind: "subtask",
      text: "q1",
      depth: 1,
      parent: "root",
      status: "ready",
      item_id: "a.1",
      depends_on: [],
    }),
    e("node.created", {
      key: "root.item2",
      kind: "subtask",
      text: "q2",
      depth: 1,
      parent: "root",
      status: "ready",
      item_id: "a.2",
      depends_on: [],
    }),
    e("node.created", {
      key: "root.item3",
      kind: "subtask",
      text: "q3",
      depth: 1,
      parent: "root",
      status: "ready",
      item_id: "a.3",
      depends_on: [],
    }),
    e("node.created", {
      key: "root.aggregate",
      kind: "aggregate",
      text: "Compose",
      depth: 1,
      parent: "root",
      status: "pending",
      item_id: null,
      depends_on: ["root.item1", "root.item2", "root.item3"],
    }),
    e("attempt.queued", {
      key: "root.item1",
      number: 1,
      repair: false,
      attempt: 22,
      endpoint: 24,
      primitive: "direct",
    }),
    e("attempt.queued", {
      key: "root.item2",
      number: 1,
      repair: false,
      attempt: 23,
      endpoint: 24,
      primitive: "direct",
    }),
    e("attempt.queued", {
      key: "root.item3",
      number: 1,
      repair: false,
      attempt: 24,
      endpoint: 24,
      primitive: "direct",
    }),
    e("attempt.finished", {
      node: "root.item1",
      answer: "A",
      status: "ok",
      attempt: 22,
      cost_usd: 0.0005,
      latency_s: 0.5,
      tokens_in: 540,
      tokens_out: 1,
      error_kind: null,
      error_message: null,
    }),
    e("attempt.finished", {
      node: "root.item2",
      answer: null,
      status: "error",
      attempt: 23,
      cost_usd: 0.0002,
      latency_s: 1.5,
      tokens_in: 100,
      tokens_out: 0,
      error_kind: "timeout",
      error_message: "took too long",
    }),
    e("attempt.finished", {
      node: "root.item3",
      answer: "A",
      status: "ok",
      attempt: 24,
      cost_usd: 0.0003,
      latency_s: 0.25,
      tokens_in: 300,
      tokens_out: 2,
      error_kind: null,
      error_message: null,
    }),
    e("node.succeeded", { key: "root.item1", answer: "A", attempt: 1 }),
    e("node.failed", { key: "root.item2", reason: "Gave up" }),
    e("node.succeeded", { key: "root.item3", answer: "A", attempt: 1 }),
    e("node.skipped", { key: "root.aggregate", reason: "dependency root.item2 failed" }),
    e("node.failed", { key: "root", reason: "subtasks did not complete" }),
    e("run.finished", {
      status: "failed",
      reason: "the task failed",
      answer: "",
      verification: {},
      tokens_in: 940,
      tokens_out: 3,
      cost_usd: 0.001,
      latency_s: 2.25,
    }),
  ];
}

const start = () => emptyTree({ id: 10 });
const byKey = (tree: ReturnType<typeof start>) => new Map(tree.nodes.map((n) => [n.key, n]));

function overlaps(a: Placed, b: Placed): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

describe("the tree built from events", () => {
  const events = compositeRun();

  it("grows node by node as the events arrive", () => {
    let tree = start();
    const counts: number[] = [];
    for (const event of events) {
      tree = applyEvents(tree, [event]);
      counts.push(tree.nodes.length);
    }
    expect(counts.slice(0, 8)).toEqual([0, 0, 1, 1, 2, 3, 4, 5]);
    expect(tree.nodes.map((n) => n.key)).toEqual(["root", "root.item1", "root.item2", "root.item3", "root.aggregate"]);
    expect(tree.seq).toBe(events.length);
  });

  it("keeps parents and dependencies as edges", () => {
    const tree = applyEvents(start(), events.slice(0, 8));
    const layout = layoutTree(tree.nodes);
    const child = layout.edges.filter((x) => x.kind === "child").map((x) => `${x.source}>${x.target}`);
    expect(child.sort()).toEqual(["root>root.aggregate", "root>root.item1", "root>root.item2", "root>root.item3"]);
    const deps = layout.edges.filter((x) => x.kind === "dependency").map((x) => `${x.source}>${x.target}`);
    expect(deps.sort()).toEqual([
      "root.item1>root.aggregate",
      "root.item2>root.aggregate",
      "root.item3>root.aggregate",
    ]);
    const children = childrenOf(tree.nodes);
    expect(children.get(null)?.map((n) => n.key)).toEqual(["root"]);
    expect(children.get("root")?.map((n) => n.key)).toEqual([
      "root.item1",
      "root.item2",
      "root.item3",
      "root.aggregate",
    ]);
  });

  it("updates statuses, the pair, attempts and the answer", () => {
    let tree = applyEvents(start(), events.slice(0, 4), { models: { 24: "replay/gpt-3.5" } });
    expect(tree.run.status).toBe("running");
    expect(byKey(tree).get("root")?.status).toBe("running"); // decomposed
    tree = applyEvents(tree, events.slice(4, 9), { models: { 24: "replay/gpt-3.5" } });
    const item1 = byKey(tree).get("root.item1")!;
    expect(item1.status).toBe("running");
    expect(item1.model).toBe("replay/gpt-3.5");
    expect(item1.primitive).toBe("direct");
    expect(item1.attempts).toEqual([expect.objectContaining({ number: 1, status: "queued", model: "replay/gpt-3.5" })]);
    tree = applyEvents(tree, events.slice(9));
    const nodes = byKey(tree);
    expect(nodes.get("root.item1")).toMatchObject({ status: "succeeded", answer: "A", tokens_in: 540 });
    expect(nodes.get("root.item2")).toMatchObject({ status: "failed", output: "Gave up" });
    expect(nodes.get("root.item2")!.attempts[0]).toMatchObject({
      status: "error",
      error_kind: "timeout",
      error_message: "took too long",
    });
    expect(nodes.get("root.aggregate")!.status).toBe("skipped");
    expect(tree.run).toMatchObject({
      status: "failed",
      end_reason: "the task failed",
      tokens_in: 940,
      cost_usd: 0.001,
    });
  });

  it("rolls totals up to the ancestors", () => {
    const tree = applyEvents(start(), events.slice(0, 14));
    const nodes = byKey(tree);
    expect(nodes.get("root.item2")!.subtree).toEqual({
      tokens_in: 100,
      tokens_out: 0,
      cost_usd: 0.0002,
      latency_s: 1.5,
    });
    const root = nodes.get("root")!.subtree;
    expect(root.tokens_in).toBe(940);
    expect(root.tokens_out).toBe(3);
    expect(root.cost_usd).toBeCloseTo(0.001, 10);
    expect(root.latency_s).toBeCloseTo(2.25, 10);
    expect(nodes.get("root")!.tokens_in).toBe(0); // its own: none
  });

  it("ignores events already in the snapshot and replays the later ones on a new snapshot", () => {
    const upTo8 = applyEvents(start(), events.slice(0, 8));
    const snapshot: Tree = { run: { ...upTo8.run, last_seq: 8 }, nodes: upTo8.nodes };
    // a stale duplicate of node.created for item1 (seq 5) must not reset it
    const tree = rebase(snapshot, events.slice(0, 12));
    expect(tree.seq).toBe(12);
    expect(byKey(tree).get("root.item1")!.status).toBe("running");
    expect(byKey(tree).get("root.item1")!.tokens_in).toBe(540);
    const again = applyEvents(tree, events.slice(4, 12));
    expect(again).toBe(tree);
  });

  it("takes a checker's verdict that comes after the run ended", () => {
    const ended = applyEvents(start(), [
      ...events.slice(0, 8),
      {
        seq: 9,
        type: "run.finished",
        payload: {
          status: "succeeded",
          reason: "finished",
          answer: "42",
          verification: { method: "checker", checker: "gsm8k", pending: true },
        },
      },
    ]);
    expect(ended.run.verification).toEqual({ method: "checker", checker: "gsm8k", pending: true });
    const verified = applyEvents(ended, [
      {
        seq: 10,
        type: "run.verified",
        payload: {
          verification: { method: "checker", checker: "gsm8k", score: 1, correct: true, detail: "42 is correct" },
        },
      },
    ]);
    expect(verified.run.verification).toEqual({
      method: "checker",
      checker: "gsm8k",
      score: 1,
      correct: true,
      detail: "42 is correct",
    });
    expect(verified.run.status).toBe("succeeded");
  });

  it("shows a node answered while the policy reviews its answer, then succeeded once it accepts one", () => {
    const answered = applyEvents(start(), [
      ...events.slice(0, 8),
      { seq: 9, type: "node.answered", payload: { key: "root.item1", answer: "B", attempt: 1 } },
    ]);
    expect(byKey(answered).get("root.item1")!.status).toBe("answered");
    const accepted = applyEvents(answered, [
      { seq: 10, type: "node.succeeded", payload: { key: "root.item1", answer: "B", attempt: 1, accepted: true } },
    ]);
    expect(byKey(accepted).get("root.item1")!.status).toBe("succeeded");
  });

  it("marks waiting nodes cancelled when the run is cancelled", () => {
    const tree = applyEvents(start(), [
      ...events.slice(0, 8),
      { seq: 9, type: "run.finished", payload: { status: "cancelled", reason: "cancelled by admin" } },
    ]);
    expect(tree.run.status).toBe("cancelled");
    expect(byKey(tree).get("root.aggregate")!.status).toBe("cancelled");
    expect(byKey(tree).get("root")!.status).toBe("running");
  });
});

describe("the layout", () => {
  it("places parents above their children, dependencies above dependents, without overlap", () => {
    seq = 0;
    const tree = applyEvents(start(), [
      e("node.created", {
        key: "root",
        kind: "root",
        text: "t",
        depth: 0,
        parent: null,
        status: "running",
        depends_on: [],
      }),
      e("node.created", {
        key: "root.a",
        kind: "subtask",
        text: "a",
        depth: 1,
        parent: "root",
        status: "ready",
        depends_on: [],
      }),
      e("node.created", {
        key: "root.b",
        kind: "subtask",
        text: "b",
        depth: 1,
        parent: "root",
        status: "pending",
        depends_on: ["root.a"],
      }),
      e("node.created", {
        key: "root.c",
        kind: "subtask",
        text: "c",
        depth: 1,
        parent: "root",
        status: "ready",
        depends_on: [],
      }),
      e("node.created", {
        key: "root.a.x",
        kind: "subtask",
        text: "x",
        depth: 2,
        parent: "root.a",
        status: "ready",
        depends_on: [],
      }),
      e("node.created", {
        key: "root.a.y",
        kind: "subtask",
        text: "y",
        depth: 2,
        parent: "root.a",
        status: "ready",
        depends_on: [],
      }),
      e("node.created", {
        key: "root.aggregate",
        kind: "aggregate",
        text: "agg",
        depth: 1,
        parent: "root",
        status: "pending",
        depends_on: ["root.b", "root.c"],
      }),
    ]);
    const layout = layoutTree(tree.nodes);
    expect(layout.nodes).toHaveLength(7);
    const at = new Map(layout.nodes.map((p) => [p.key, p]));
    for (const edge of layout.edges) {
      const source = at.get(edge.source)!;
      const target = at.get(edge.target)!;
      expect(source.y + source.height, `${edge.source} above ${edge.target}`).toBeLessThanOrEqual(target.y);
    }
    for (let i = 0; i < layout.nodes.length; i++) {
      for (let j = i + 1; j < layout.nodes.length; j++) {
        expect(overlaps(layout.nodes[i], layout.nodes[j]), `${layout.nodes[i].key} / ${layout.nodes[j].key}`).toBe(
          false,
        );
      }
    }
    // reading order: the root first; every node inside the reported size
    expect(layout.nodes[0].key).toBe("root");
    for (const p of layout.nodes) {
      expect(p.x).toBeGreaterThanOrEqual(0);
      expect(p.x + p.width).toBeLessThanOrEqual(layout.width);
      expect(p.y + p.height).toBeLessThanOrEqual(layout.height);
    }
  });

  it("lays out a growing tree: new children land below, the old nodes stay apart", () => {
    const events = compositeRun();
    let tree = start();
    for (const event of events.slice(0, 8)) {
      tree = applyEvents(tree, [event]);
      const layout = layoutTree(tree.nodes);
      expect(layout.nodes).toHaveLength(tree.nodes.length);
      const root = layout.nodes.find((p) => p.key === "root");
      for (const p of layout.nodes) if (p.key !== "root" && root) expect(p.y).toBeGreaterThan(root.y);
    }
  });

  it("is empty for no nodes", () => {
    expect(layoutTree([])).toEqual({ nodes: [], edges: [], width: 0, height: 0 });
  });
});

describe("questionOf", () => {
  it("keeps a few-shot prompt's own question, and any other text whole", () => {
    expect(questionOf("Q: 1+1?\nA: 2\n\nQ: 2+2?\nA: 4\n\nQ: 3+3?\nA:")).toBe("Q: 3+3?\nA:");
    expect(questionOf("A passage.\n\nQ: what is it?")).toBe("A passage.\n\nQ: what is it?");
    expect(questionOf("  What is 6*7?  ")).toBe("What is 6*7?");
    expect(questionOf("")).toBe("");
  });
});
