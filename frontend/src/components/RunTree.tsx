// A run's decomposition tree: a top-down React Flow graph laid out by dagre, or a text
// outline (narrow screens, screen readers). Both show each node's status, pair, tokens,
// cost and latency, with totals rolled up per subtree; both are keyboard reachable
// (Tab to a node, Enter or Space opens it).
import { ReactFlowProvider } from "@xyflow/react";

import type { Tree } from "../api/types";
import { Graph } from "./runTree/Graph";
import { Outline } from "./runTree/Outline";
import "./RunTree.css";

export { pairLabel, shortModel } from "./runTree/parts";

export interface RunTreeProps {
  tree: Tree;
  selected?: string | null;
  onSelect?: (key: string) => void;
  height?: number;
  /** "graph" (default) or "outline". */
  mode?: "graph" | "outline";
}

export function RunTreeView({ tree, selected = null, onSelect, height = 520, mode = "graph" }: RunTreeProps) {
  if (tree.nodes.length === 0) {
    return (
      <div className="runtree-empty muted" data-testid="run-tree" data-mode={mode}>
        No nodes yet: the tree appears when the run starts.
      </div>
    );
  }
  if (mode === "outline") return <Outline tree={tree} selected={selected} onSelect={onSelect} />;
  return (
    <ReactFlowProvider>
      <Graph tree={tree} selected={selected} onSelect={onSelect} height={height} />
    </ReactFlowProvider>
  );
}
