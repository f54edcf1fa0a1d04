// The tree as a top-down React Flow graph laid out by dagre; Tab reaches each node (and
// brings it into view), Enter or Space opens it.
import {
  Background,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  useReactFlow,
  useStore,
  type Edge,
  type Node,
  type NodeProps,
} from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { memo, useEffect, useMemo } from "react";

import type { TreeNode } from "../../api/types";
import { layoutTree, NODE_HEIGHT, NODE_WIDTH, superseded } from "../../lib/treeLayout";
import type { RunTreeProps } from "../RunTree";
import { hasChildren, NodeFacts, nodeClasses, openOnKey, preview, RecoveryMarks } from "./parts";

interface CardData extends Record<string, unknown> {
  node: TreeNode;
  parent: boolean;
  earlier: boolean;
  selected: boolean;
  onSelect?: (key: string) => void;
  onFocusNode?: (key: string) => void;
}

type CardNode = Node<CardData, "run">;

const Card = memo(function Card({ data }: NodeProps<CardNode>) {
  const { node, parent, earlier, selected, onSelect, onFocusNode } = data;
  return (
    <>
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <div
        className={`runtree-card ${nodeClasses(node, earlier, selected)}`}
        data-testid="tree-node"
        data-status={node.status}
        data-key={node.key}
        role="button"
        tabIndex={0}
        aria-pressed={selected}
        onKeyDown={(event) => openOnKey(event, () => onSelect?.(node.key))}
        onFocus={() => onFocusNode?.(node.key)}
      >
        <div className="runtree-head">
          <span className={`status ${node.status}`}>{node.status}</span>
          <span className="runtree-kind">{node.kind}</span>
          <span className="runtree-key mono" title={node.key}>
            {node.key}
          </span>
        </div>
        <div className="runtree-text" title={node.text}>
          {preview(node) || <span className="muted">(no text)</span>}
        </div>
        <RecoveryMarks node={node} earlier={earlier} />
        <NodeFacts node={node} parent={parent} />
      </div>
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </>
  );
});

const nodeTypes = { run: Card };

export function Graph({
  tree,
  selected,
  onSelect,
  height,
}: Required<Pick<RunTreeProps, "tree" | "height">> & Pick<RunTreeProps, "selected" | "onSelect">) {
  const flow = useReactFlow();
  const width = useStore((s) => s.width);
  const viewHeight = useStore((s) => s.height);
  const layout = useMemo(() => layoutTree(tree.nodes), [tree.nodes]);
  const parents = useMemo(() => hasChildren(tree), [tree]);
  const byKey = useMemo(() => new Map(tree.nodes.map((n) => [n.key, n])), [tree.nodes]);
  const positions = useMemo(() => new Map(layout.nodes.map((p) => [p.key, { x: p.x, y: p.y }])), [layout]);

  // A node focused with Tab but out of view: bring it into view.
  const onFocusNode = useMemo(
    () => (key: string) => {
      const at = positions.get(key);
      if (!at) return;
      const { x, y, zoom } = flow.getViewport();
      const left = at.x * zoom + x;
      const top = at.y * zoom + y;
      const w = NODE_WIDTH * zoom;
      const h = NODE_HEIGHT * zoom;
      if (left < 0 || top < 0 || left + w > width || top + h > viewHeight) {
        void flow.setCenter(at.x + NODE_WIDTH / 2, at.y + NODE_HEIGHT / 2, {
          zoom: Math.max(zoom, 0.6),
          duration: 150,
        });
      }
    },
    [flow, width, viewHeight, positions],
  );

  const nodes: CardNode[] = useMemo(
    () =>
      layout.nodes.map((p) => ({
        id: p.key,
        type: "run" as const,
        position: { x: p.x, y: p.y },
        width: p.width,
        height: p.height,
        draggable: false,
        connectable: false,
        selectable: false,
        focusable: false,
        data: {
          node: byKey.get(p.key)!,
          parent: parents.has(p.key),
          earlier: superseded(byKey.get(p.key)!, byKey),
          selected: p.key === selected,
          onSelect,
          onFocusNode,
        },
      })),
    [layout, byKey, parents, selected, onSelect, onFocusNode],
  );

  const edges: Edge[] = useMemo(
    () =>
      layout.edges.map((edge) => {
        const target = byKey.get(edge.target);
        const running = target?.status === "running";
        return {
          id: edge.id,
          source: edge.source,
          target: edge.target,
          type: "smoothstep",
          animated: edge.kind === "child" && running,
          className: `runtree-edge ${edge.kind}`,
          markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 },
          focusable: false,
          selectable: false,
        };
      }),
    [layout.edges, byKey],
  );

  // Fit the view when the tree grows (a new node), not on every status change.
  const shape = layout.nodes.map((p) => p.key).join("|");
  useEffect(() => {
    const id = window.setTimeout(() => void flow.fitView({ padding: 0.12, maxZoom: 1, duration: 200 }), 30);
    return () => window.clearTimeout(id);
  }, [shape, width, viewHeight, flow]);

  return (
    <div className="runtree-graph" data-testid="run-tree" data-mode="graph" style={{ height }}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        onNodeClick={(_, clicked) => onSelect?.(clicked.id)}
        fitView
        fitViewOptions={{ padding: 0.12, maxZoom: 1 }}
        minZoom={0.15}
        maxZoom={1.6}
        nodesDraggable={false}
        nodesConnectable={false}
        nodesFocusable={false}
        edgesFocusable={false}
        elementsSelectable={false}
        panOnScroll
        zoomOnDoubleClick={false}
        aria-label="Decomposition tree"
      >
        <Background gap={20} size={1} />
        <Controls showInteractive={false} position="bottom-right" />
      </ReactFlow>
    </div>
  );
}
