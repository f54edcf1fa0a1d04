import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { RunTreeView } from "../src/components/RunTree";
import { applyEvents } from "../src/lib/eventTree";
import { emptyTree, type LiveEvent } from "../src/lib/liveTree";

let seq = 0;
const e = (type: string, payload: Record<string, unknown>): LiveEvent => ({
  seq: ++seq,
  type,
  payload,
  created_at: "2026-01-01T00:00:00Z",
});

const SHOTS = "Q: 1+1?\nAnswer:\n2\n\nQ: 2+2?\nAnswer:\n4\n\n";

describe("RunTreeView outline", () => {
  it("shows a recorded item's own question, and other nodes' text whole", () => {
    const title = "Answer each part:\n\nPart 1: Q: 3+3?\n\nPart 2: Q: 5+5?";
    const tree = applyEvents(emptyTree({ id: 1 }), [
      e("node.created", {
        key: "root",
        kind: "root",
        text: title,
        depth: 0,
        parent: null,
        status: "ready",
        item_id: null,
        depends_on: [],
      }),
      e("node.created", {
        key: "root.item1",
        kind: "subtask",
        text: `${SHOTS}Q: 3+3?\nAnswer:`,
        depth: 1,
        parent: "root",
        status: "ready",
        item_id: "a.1",
        depends_on: [],
      }),
    ]);
    render(<RunTreeView tree={tree} mode="outline" />);
    const item = screen.getByText(/Q: 3\+3\?\s+Answer:/, { selector: ".runtree-text" });
    expect(item.textContent).not.toContain("1+1");
    expect(item.getAttribute("title")).toContain("Q: 1+1?"); // the whole prompt on hover
    const root = screen.getByText(/Answer each part/, { selector: ".runtree-text" });
    expect(root.textContent).toContain("Part 1");
    expect(root.textContent).toContain("Part 2");
  });
});

describe("RunTreeView recovery", () => {
  it("marks a replanned node, its cancelled parts and the parts of its earlier plan", () => {
    seq = 0;
    const node = (key: string, parent: string | null, round = 0) =>
      e("node.created", {
        key,
        kind: parent ? "subtask" : "root",
        text: `text of ${key}`,
        depth: parent ? 1 : 0,
        parent,
        status: "ready",
        item_id: null,
        depends_on: [],
        ...(round ? { round } : {}),
      });
    const tree = applyEvents(emptyTree({ id: 1 }), [
      node("root", null),
      e("node.decomposed", { key: "root", subtasks: [] }),
      node("root.a", "root"),
      node("root.b", "root"),
      e("node.succeeded", { key: "root.a", answer: "5" }),
      e("node.cancelled", { key: "root.b", reason: "root.c failed: root is replanned" }),
      e("node.replanned", { key: "root", feedback: "part c failed: bad_request", replans: 1 }),
      node("root.a_r1", "root", 1),
    ]);
    render(<RunTreeView tree={tree} mode="outline" />);
    const rows = new Map(screen.getAllByTestId("tree-node").map((row) => [row.dataset.key, row]));
    expect(rows.get("root")!.className).toContain("replanned");
    expect(screen.getByTestId("replanned").getAttribute("title")).toBe("Replanned: part c failed: bad_request");
    expect(rows.get("root.b")!.className).toContain("st-cancelled");
    for (const key of ["root.a", "root.b"]) expect(rows.get(key)!.className).toContain("superseded");
    expect(rows.get("root.a_r1")!.className).not.toContain("superseded");
    expect(screen.getAllByTestId("earlier-round")).toHaveLength(2);
  });
});
