// A run's decomposition tree: a top-down React Flow graph laid out by dagre, or a text
// outline (narrow screens, screen readers). Both show each node's status, pair, tokens,
// cost and latency, with totals rolled up per subtree; both are keyboard reachable
// (Tab to a node, Enter or Space opens it).
import {
  Background,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  useStore,
  type Edge,
  type Node,
  type NodeProps,
} from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { memo, useEffect, useMemo, useRef, type KeyboardEvent } from "react";

import type { Tree, TreeNode } from "../api/types";
import { childrenOf, layoutTree, NODE_HEIGHT, NODE_WIDTH } from "../lib/eventTree";
import { questionOf, seconds, tokens, usd } from "../lib/format";
import "./RunTree.css";

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

/** Short model names: the replay pool's "replay/" prefix says nothing on a badge. */
export function shortModel(model: string | null | undefined): string {
  if (!model) return "";
  return model.replace(/^replay\//, "");
}

export function pairLabel(node: Pick<TreeNode, "model" | "primitive">): string | null {
  if (!node.model && !node.primitive) return null;
  return [shortModel(node.model) || "?", node.primitive || "?"].join(" · ");
}

function hasChildren(tree: Tree): Set<string> {
  return new Set(tree.nodes.map((n) => n.parent).filter((p): p is string => !!p));
}

function NodeFacts({ node, parent }: { node: TreeNode; parent: boolean }) {
  const pair = pairLabel(node);
  const own = node.tokens_in + node.tokens_out;
  const sub = node.subtree;
  return (
    <>
      {pair && (
        <div className="runtree-pair">
          <span className="badge pair" title={`${node.model ?? "?"} · ${node.primitive ?? "?"}`}>
            {pair}
          </span>
        </div>
      )}
      <div className="runtree-badges">
        {own > 0 && (
          <span className="badge" title={`${node.tokens_in} tokens in, ${node.tokens_out} out`}>
            {tokens(own)} tok
          </span>
        )}
        {node.cost_usd > 0 && <span className="badge">{usd(node.cost_usd)}</span>}
        {node.latency_s > 0 && <span className="badge">{seconds(node.latency_s)}</span>}
      </div>
      {parent && sub.tokens_in + sub.tokens_out + sub.cost_usd + sub.latency_s > 0 && (
        <div className="runtree-subtree" title="totals of this node and everything below it">
          Σ {tokens(sub.tokens_in + sub.tokens_out)} tok · {usd(sub.cost_usd)} · {seconds(sub.latency_s)}
        </div>
      )}
    </>
  );
}

/** A node's text as shown: a recorded item's own question (not the few-shot examples its
 * prompt may share with every item of its benchmark); other nodes' text whole. */
function preview(node: TreeNode): string {
  return node.item_id ? questionOf(node.text) : node.text;
}

function label(node: TreeNode): string {
  const pair = pairLabel(node);
  return `${node.kind} ${node.key}, ${node.status}${pair ? `, ${pair}` : ""}: ${preview(node).slice(0, 120)}`;
}

function openOnKey(event: KeyboardEvent, open: () => void) {
  if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    open();
  }
}

// Graph

interface CardData extends Record<string, unknown> {
  node: TreeNode;
  parent: boolean;
  selected: boolean;
  onSelect?: (key: string) => void;
  onFocusNode?: (key: string) => void;
}

type CardNode = Node<CardData, "run">;

const Card = memo(function Card({ data }: NodeProps<CardNode>) {
  const { node, parent, selected, onSelect, onFocusNode } = data;
  return (
    <>
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <div
        className={`runtree-card st-${node.status}${selected ? " selected" : ""}`}
        data-testid="tree-node"
        data-status={node.status}
        data-key={node.key}
        role="button"
        tabIndex={0}
        aria-pressed={selected}
        aria-label={label(node)}
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
        <NodeFacts node={node} parent={parent} />
      </div>
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </>
  );
});

const nodeTypes = { run: Card };

function Graph({ tree, selected, onSelect, height }: Required<Pick<RunTreeProps, "tree" | "height">> & Pick<RunTreeProps, "selected" | "onSelect">) {
  const flow = useReactFlow();
  const width = useStore((s) => s.width);
  const viewHeight = useStore((s) => s.height);
  const layout = useMemo(() => layoutTree(tree.nodes), [tree.nodes]);
  const parents = useMemo(() => hasChildren(tree), [tree]);
  const byKey = useMemo(() => new Map(tree.nodes.map((n) => [n.key, n])), [tree.nodes]);
  const positions = useRef(new Map<string, { x: number; y: number }>());
  positions.current = new Map(layout.nodes.map((p) => [p.key, { x: p.x, y: p.y }]));

  // A node focused with Tab but out of view: bring it into view.
  const onFocusNode = useMemo(
    () => (key: string) => {
      const at = positions.current.get(key);
      if (!at) return;
      const { x, y, zoom } = flow.getViewport();
      const left = at.x * zoom + x;
      const top = at.y * zoom + y;
      const w = NODE_WIDTH * zoom;
      const h = NODE_HEIGHT * zoom;
      if (left < 0 || top < 0 || left + w > width || top + h > viewHeight) {
        void flow.setCenter(at.x + NODE_WIDTH / 2, at.y + NODE_HEIGHT / 2, { zoom: Math.max(zoom, 0.6), duration: 150 });
      }
    },
    [flow, width, viewHeight],
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
        data: { node: byKey.get(p.key)!, parent: parents.has(p.key), selected: p.key === selected, onSelect, onFocusNode },
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

// Outline

function Outline({ tree, selected, onSelect }: Pick<RunTreeProps, "tree" | "selected" | "onSelect">) {
  const children = useMemo(() => childrenOf(tree.nodes), [tree.nodes]);
  const render = (parent: string | null, depth: number) => {
    const list = children.get(parent);
    if (!list || list.length === 0) return null;
    return (
      <ul className={depth === 0 ? "runtree-outline" : undefined}>
        {list.map((node) => {
          const isParent = children.has(node.key);
          return (
            <li key={node.key}>
              <div
                className={`runtree-row st-${node.status}${node.key === selected ? " selected" : ""}`}
                data-testid="tree-node"
                data-status={node.status}
                data-key={node.key}
                role="button"
                tabIndex={0}
                aria-pressed={node.key === selected}
                aria-label={label(node)}
                onClick={() => onSelect?.(node.key)}
                onKeyDown={(event) => openOnKey(event, () => onSelect?.(node.key))}
              >
                <div className="runtree-head">
                  <span className={`status ${node.status}`}>{node.status}</span>
                  <span className="runtree-kind">{node.kind}</span>
                  <span className="runtree-key mono">{node.key}</span>
                </div>
                <div className="runtree-text" title={node.text}>
                  {preview(node) || <span className="muted">(no text)</span>}
                </div>
                <NodeFacts node={node} parent={isParent} />
              </div>
              {render(node.key, depth + 1)}
            </li>
          );
        })}
      </ul>
    );
  };
  return (
    <div className="runtree-outline-wrap" data-testid="run-tree" data-mode="outline">
      {render(null, 0)}
    </div>
  );
}
