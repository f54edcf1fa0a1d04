import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { RunTreeView } from "../src/components/RunTree";
import { applyEvents, emptyTree, type LiveEvent } from "../src/lib/eventTree";

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
