// A node's side panel (a drawer on a phone): prompt, output, answer, verification, totals,
// best-of-N candidates, attempts, and re-running it with another pair. Escape closes it
// and puts the focus back on the node it was opened from.
import { useEffect, useEffectEvent, useId, useRef } from "react";

import type { Attempt, Endpoint, TreeNode } from "../../api/types";
import { pairLabel, shortModel } from "../../components/RunTree";
import { Scrollable } from "../../components/Scrollable";
import { seconds, tokens, usd } from "../../lib/format";
import { Verification } from "./FinalAnswer";
import { Rerun } from "./Rerun";

interface PanelProps {
  runId: number;
  poolId: number | null;
  node: TreeNode;
  endpoints: Endpoint[];
  narrow: boolean;
  onClose: () => void;
  onRerun: () => void;
}

/** Focus the tree node `key` (the panel was opened from it). */
function focusNode(key: string) {
  const selector = `[data-testid="tree-node"][data-key="${CSS.escape(key)}"]`;
  document.querySelector<HTMLElement>(selector)?.focus({ preventScroll: true });
}

export function NodePanel({ runId, poolId, node, endpoints, narrow, onClose, onRerun }: PanelProps) {
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const close = useEffectEvent(onClose);
  const key = node.key;

  useEffect(() => {
    heading.current?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== "Escape") return;
      event.preventDefault();
      close();
    };
    document.addEventListener("keydown", onKey);
    return () => {
      document.removeEventListener("keydown", onKey);
      window.setTimeout(() => focusNode(key), 0);
    };
  }, [key]);

  const pair = pairLabel(node);
  return (
    <>
      {narrow && <div className="drawer-backdrop" onClick={onClose} aria-hidden="true" />}
      <div
        className={`node-panel panel${narrow ? " drawer" : ""}`}
        data-testid="node-panel"
        data-key={node.key}
        role={narrow ? "dialog" : "complementary"}
        aria-modal={narrow ? true : undefined}
        aria-labelledby={headingId}
      >
        <div className="node-panel-head">
          <h2 id={headingId} ref={heading} tabIndex={-1}>
            <span className="mono">{node.key}</span>
          </h2>
          <span className={`status ${node.status}`}>{node.status}</span>
          <span className="badge">{node.kind}</span>
          <span className="spacer" />
          <button type="button" className="close" onClick={onClose} aria-label="Close the node panel (Escape)">
            ×
          </button>
        </div>
        <div className="node-panel-body">
          <div className="row small">
            {pair && <span className="badge pair">{pair}</span>}
            {node.item_id && (
              <span className="badge" title="recorded item">
                {node.item_id}
              </span>
            )}
            {node.depends_on.length > 0 && <span className="muted">depends on {node.depends_on.join(", ")}</span>}
          </div>
          <NodeText node={node} />
          <NodeTotals node={node} />
          {node.best_of && (
            <>
              <h3>Best of N</h3>
              <Scrollable as="pre" label="Best of N">
                {JSON.stringify(node.best_of, null, 2)}
              </Scrollable>
            </>
          )}
          <Attempts node={node} />
          {node.kind !== "aggregate" && (
            <Rerun runId={runId} poolId={poolId} node={node} endpoints={endpoints} onDone={onRerun} />
          )}
        </div>
      </div>
    </>
  );
}

function NodeText({ node }: { node: TreeNode }) {
  return (
    <>
      <h3>Prompt</h3>
      <Scrollable as="pre" label="Prompt">
        {node.text || "(empty)"}
      </Scrollable>
      {node.output && (
        <>
          <h3>Output</h3>
          <Scrollable as="pre" label="Output">
            {node.output}
          </Scrollable>
        </>
      )}
      <h3>Answer</h3>
      {node.answer ? (
        <Scrollable as="pre" className="answer" label="Answer">
          {node.answer}
        </Scrollable>
      ) : (
        <p className="muted small">No answer yet.</p>
      )}
      <h3>Verification</h3>
      <Verification value={node.verification} />
    </>
  );
}

function NodeTotals({ node }: { node: TreeNode }) {
  const sub = node.subtree;
  return (
    <>
      <h3>Totals</h3>
      <dl className="kv">
        <div>
          <dt>This node</dt>
          <dd>
            {tokens(node.tokens_in + node.tokens_out)} tok · {usd(node.cost_usd)} · {seconds(node.latency_s)}
          </dd>
        </div>
        <div>
          <dt>With its subtree</dt>
          <dd>
            {tokens(sub.tokens_in + sub.tokens_out)} tok · {usd(sub.cost_usd)} · {seconds(sub.latency_s)}
          </dd>
        </div>
      </dl>
    </>
  );
}

function Attempts({ node }: { node: TreeNode }) {
  return (
    <>
      <h3>Attempts ({node.attempts.length})</h3>
      {node.attempts.length === 0 ? (
        <p className="muted small">
          No model call on this node{node.kind === "aggregate" ? ": it composes its children's answers" : " yet"}.
        </p>
      ) : (
        <ol className="attempts">
          {node.attempts.map((a) => (
            <AttemptItem key={a.number} attempt={a} />
          ))}
        </ol>
      )}
    </>
  );
}

function AttemptItem({ attempt: a }: { attempt: Attempt }) {
  return (
    <li className={`attempt st-${a.status}`}>
      <div className="row">
        <b>#{a.number}</b>
        <span className={`status ${a.status}`}>{a.status}</span>
        <span className="badge pair" title={`${a.model} · ${a.primitive}`}>
          {shortModel(a.model)} · {a.primitive}
        </span>
      </div>
      <div className="small muted">
        {tokens(a.tokens_in)} in · {tokens(a.tokens_out)} out · {usd(a.cost_usd)} · {seconds(a.latency_s)}
      </div>
      {a.answer && (
        <div className="small">
          answer: <span className="mono">{a.answer.length > 200 ? `${a.answer.slice(0, 200)}…` : a.answer}</span>
        </div>
      )}
      {(a.error_kind || a.error_message) && (
        <div className="error small">
          <b>{a.error_kind ?? "error"}</b>
          {a.error_message ? `: ${a.error_message}` : ""}
        </div>
      )}
    </li>
  );
}
