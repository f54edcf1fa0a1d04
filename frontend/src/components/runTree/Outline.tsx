// The tree as a nested list (narrow screens, screen readers); each node a button.
import { useMemo } from "react";

import { childrenOf, superseded } from "../../lib/treeLayout";
import type { RunTreeProps } from "../RunTree";
import { NodeFacts, nodeClasses, openOnKey, preview, RecoveryMarks } from "./parts";

export function Outline({ tree, selected, onSelect }: Pick<RunTreeProps, "tree" | "selected" | "onSelect">) {
  const children = useMemo(() => childrenOf(tree.nodes), [tree.nodes]);
  const byKey = useMemo(() => new Map(tree.nodes.map((n) => [n.key, n])), [tree.nodes]);
  const render = (parent: string | null, depth: number) => {
    const list = children.get(parent);
    if (!list || list.length === 0) return null;
    return (
      <ul className={depth === 0 ? "runtree-outline" : undefined}>
        {list.map((node) => {
          const isParent = children.has(node.key);
          const earlier = superseded(node, byKey);
          return (
            <li key={node.key}>
              <div
                className={`runtree-row ${nodeClasses(node, earlier, node.key === selected)}`}
                data-testid="tree-node"
                data-status={node.status}
                data-key={node.key}
                role="button"
                tabIndex={0}
                aria-pressed={node.key === selected}
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
                <RecoveryMarks node={node} earlier={earlier} />
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
