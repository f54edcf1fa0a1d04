import { describe, expect, it } from "vitest";

import type { LiveTree } from "../src/lib/liveTree";
import { appendDelta, forget, withStreaming, type RunDelta, type Streamed } from "../src/lib/streaming";

const delta = (offset: number, text: string, attempt = 1, node = "root"): RunDelta => ({
  kind: "delta",
  node,
  attempt,
  primitive: "direct",
  offset,
  text,
});

describe("streamed text", () => {
  it("grows piece by piece, in order", () => {
    let held: Streamed = {};
    held = appendDelta(held, delta(0, "Hel"));
    held = appendDelta(held, delta(3, "lo"));
    expect(held.root).toEqual({ attempt: 1, start: 0, text: "Hello" });
  });

  it("ignores a piece after a gap, and one of an older attempt", () => {
    let held = appendDelta({}, delta(0, "Hel"));
    held = appendDelta(held, delta(10, "far on"));
    expect(held.root.text).toBe("Hel");
    held = appendDelta(held, delta(0, "Re", 2));
    expect(held.root).toEqual({ attempt: 2, start: 0, text: "Re" });
    expect(appendDelta(held, delta(3, "x", 1))).toBe(held);
  });

  it("shows what came after a socket joined mid-call, marked as a part", () => {
    let held = appendDelta({}, delta(5, "middle"));
    held = appendDelta(held, delta(11, " and on"));
    expect(held.root).toEqual({ attempt: 1, start: 5, text: "middle and on" });
    const tree = { nodes: [{ key: "root", status: "running", output: "" }] } as unknown as LiveTree;
    expect(withStreaming(tree, held).nodes[0].output).toBe("…middle and on");
  });

  it("shows on working nodes only, and is forgotten", () => {
    const tree = {
      nodes: [
        { key: "root", status: "running", output: "" },
        { key: "root.a", status: "succeeded", output: "done" },
      ],
    } as unknown as LiveTree;
    const held = appendDelta(appendDelta({}, delta(0, "so far")), delta(0, "late", 1, "root.a"));
    const shown = withStreaming(tree, held);
    expect(shown.nodes.map((n) => n.output)).toEqual(["so far", "done"]);
    expect(forget(held, "root")).toEqual({ "root.a": { attempt: 1, start: 0, text: "late" } });
    expect(withStreaming(tree, {})).toBe(tree);
  });
});
