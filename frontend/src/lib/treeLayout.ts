// How a run's tree is drawn: its edges, a top-down dagre layout, each node's children (the
// outline), and which nodes a replan has superseded.
import dagre from "@dagrejs/dagre";

import type { TreeNode } from "../api/types";

export const NODE_WIDTH = 250;
export const NODE_HEIGHT = 132;

export interface Placed {
  key: string;
  x: number; // top-left corner
  y: number;
  width: number;
  height: number;
}

export interface LayoutEdge {
  id: string;
  source: string;
  target: string;
  kind: "child" | "dependency";
}

export interface Layout {
  nodes: Placed[];
  edges: LayoutEdge[];
  width: number;
  height: number;
}

/** The tree's edges: parent -> child, and dependency -> dependent between siblings. */
export function treeEdges(nodes: TreeNode[]): LayoutEdge[] {
  const keys = new Set(nodes.map((n) => n.key));
  const edges: LayoutEdge[] = [];
  for (const node of nodes) {
    if (node.parent && keys.has(node.parent)) {
      edges.push({ id: `c:${node.parent}->${node.key}`, source: node.parent, target: node.key, kind: "child" });
    }
    for (const dep of node.depends_on) {
      if (keys.has(dep) && dep !== node.key) {
        edges.push({ id: `d:${dep}->${node.key}`, source: dep, target: node.key, kind: "dependency" });
      }
    }
  }
  return edges;
}

/** A top-down dagre layout; nodes come back in reading order (top to bottom, left to right). */
export function layoutTree(nodes: TreeNode[], size = { width: NODE_WIDTH, height: NODE_HEIGHT }): Layout {
  const edges = treeEdges(nodes);
  if (nodes.length === 0) return { nodes: [], edges, width: 0, height: 0 };
  const g = new dagre.graphlib.Graph({ multigraph: false });
  g.setGraph({ rankdir: "TB", nodesep: 28, ranksep: 56, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) g.setNode(node.key, { width: size.width, height: size.height });
  // Edges go in last to first: dagre then orders siblings as the tree lists them, left to right.
  for (const edge of edges.slice().reverse()) {
    // the hierarchy ranks the nodes; a dependency also pushes its dependent one rank down
    if (!g.hasEdge(edge.source, edge.target))
      g.setEdge(edge.source, edge.target, { weight: edge.kind === "child" ? 2 : 1, minlen: 1 });
  }
  dagre.layout(g);
  const placed: Placed[] = nodes.map((node) => {
    const at = g.node(node.key) as { x: number; y: number }; // dagre is untyped
    return {
      key: node.key,
      x: at.x - size.width / 2,
      y: at.y - size.height / 2,
      width: size.width,
      height: size.height,
    };
  });
  placed.sort((a, b) => a.y - b.y || a.x - b.x);
  const width = Math.max(...placed.map((p) => p.x + p.width));
  const height = Math.max(...placed.map((p) => p.y + p.height));
  return { nodes: placed, edges, width, height };
}

/** Children of each node, in the tree's order (for the outline). */
export function childrenOf(nodes: TreeNode[]): Map<string | null, TreeNode[]> {
  const keys = new Set(nodes.map((n) => n.key));
  const children = new Map<string | null, TreeNode[]>();
  for (const node of nodes) {
    const parent = node.parent && keys.has(node.parent) ? node.parent : null;
    const list = children.get(parent) ?? [];
    list.push(node);
    children.set(parent, list);
  }
  return children;
}

/** A part of an earlier decomposition of its parent, which was replanned since: kept in the
 * tree as it ended, no longer part of the answer. */
export function superseded(node: Pick<TreeNode, "round" | "parent">, byKey: Map<string, TreeNode>): boolean {
  const parent = node.parent ? byKey.get(node.parent) : undefined;
  return parent !== undefined && node.round < parent.replans;
}
