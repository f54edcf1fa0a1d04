// What the graph and the outline both show of a node: its pair, tokens, cost, latency and
// subtree totals, and its text (a node button is named by what it shows).
import type { KeyboardEvent } from "react";

import type { Tree, TreeNode } from "../../api/types";
import { questionOf, seconds, tokens, usd } from "../../lib/format";

/** Short model names: the replay pool's "replay/" prefix says nothing on a badge. */
export function shortModel(model: string | null | undefined): string {
  if (!model) return "";
  return model.replace(/^replay\//, "");
}

export function pairLabel(node: Pick<TreeNode, "model" | "primitive">): string | null {
  if (!node.model && !node.primitive) return null;
  return [shortModel(node.model) || "?", node.primitive || "?"].join(" · ");
}

export function hasChildren(tree: Tree): Set<string> {
  return new Set(tree.nodes.map((n) => n.parent).filter((p): p is string => !!p));
}

/** What recovery did to a node: its decomposition replanned, or it belongs to an earlier
 * round of its parent's (kept as it ended, no longer part of the answer). */
export function RecoveryMarks({ node, earlier }: { node: TreeNode; earlier: boolean }) {
  if (node.replans === 0 && !earlier) return null;
  return (
    <span className="runtree-marks">
      {node.replans > 0 && (
        <span
          className="badge replanned"
          data-testid="replanned"
          title={node.replan_feedback ? `Replanned: ${node.replan_feedback}` : "Replanned"}
        >
          replanned{node.replans > 1 ? ` ×${node.replans}` : ""}
        </span>
      )}
      {earlier && (
        <span className="badge earlier" data-testid="earlier-round" title="A part of a plan that was replanned">
          earlier plan
        </span>
      )}
    </span>
  );
}

/** The classes a node's card or row takes from its status and recovery. */
export function nodeClasses(node: TreeNode, earlier: boolean, selected: boolean): string {
  return `st-${node.status}${earlier ? " superseded" : ""}${node.replans > 0 ? " replanned" : ""}${
    selected ? " selected" : ""
  }`;
}

export function NodeFacts({ node, parent }: { node: TreeNode; parent: boolean }) {
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
export function preview(node: TreeNode): string {
  return node.item_id ? questionOf(node.text) : node.text;
}

export function openOnKey(event: KeyboardEvent, open: () => void) {
  if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    open();
  }
}
