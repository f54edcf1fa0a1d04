// Live run: the decomposition tree growing as the run's events arrive over the WebSocket
// (useLiveRun), a side panel per node, the final answer, the connection state and the
// event log.
import { useMutation } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { Link, useParams } from "react-router";

import { ApiError, api, query } from "../api/client";
import type { TreeNode } from "../api/types";
import { RunTreeView } from "../components/RunTree";
import { ErrorText, Loading } from "../components/States";
import { RUN_ENDED } from "../lib/eventTree";
import { seconds, tokens, usd, when } from "../lib/format";
import type { LiveTree } from "../lib/liveTree";
import type { ConnectionState } from "../lib/runSocketOptions";
import { useMedia } from "../lib/useMedia";
import { EventLog } from "./liveRun/EventLog";
import { FinalAnswer } from "./liveRun/FinalAnswer";
import { NodePanel } from "./liveRun/NodePanel";
import { useLiveRun } from "./liveRun/useLiveRun";
import "./LiveRun.css";

const NARROW = "(max-width: 760px)";

const CONNECTION_TEXT: Record<ConnectionState, string> = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  offline: "offline, will resume",
  ended: "ended",
  refused: "not allowed to follow this run",
  stopped: "stopped",
};

function treeError(error: unknown): Error {
  if (error instanceof ApiError && (error.status === 404 || error.status === 403)) {
    return new Error("This run does not exist or is not yours.");
  }
  return error instanceof Error ? error : new Error(String(error));
}

function Missing({ error }: { error: Error }) {
  return (
    <div className="liverun">
      <ErrorText error={error} />
      <p>
        <Link to="/runs">Back to the runs</Link>
      </p>
    </div>
  );
}

export default function LiveRunPage() {
  const { runId: raw } = useParams();
  const runId = Number(raw);
  if (!Number.isInteger(runId) || runId <= 0) {
    return <Missing error={new Error("This run does not exist or is not yours.")} />;
  }
  return <LiveRun key={runId} runId={runId} />;
}

function LiveRun({ runId }: { runId: number }) {
  const narrow = useMedia(NARROW);
  const [mode, setMode] = useState<"graph" | "outline" | null>(null);
  const view = mode ?? (narrow ? "outline" : "graph");
  const [selected, setSelected] = useState<string | null>(null);
  const live = useLiveRun(runId);
  const { snapshot, tree } = live;

  if (snapshot.isPending) return <Loading what="Loading the run" />;
  if (!tree)
    return snapshot.isError ? <Missing error={treeError(snapshot.error)} /> : <Loading what="Loading the run" />;
  const node = selected ? (tree.nodes.find((n) => n.key === selected) ?? null) : null;

  return (
    <div className="liverun">
      <RunHeader tree={tree} connection={live.connection} onCancelled={live.refreshSoon}>
        {snapshot.isError && (
          <p className="muted small">Could not refresh the details: {treeError(snapshot.error).message}</p>
        )}
      </RunHeader>

      {RUN_ENDED.includes(tree.run.status) && <FinalAnswer tree={tree} />}

      <div className={`liverun-body${node ? " with-panel" : ""}`}>
        <section className="liverun-tree panel" aria-label="Decomposition tree">
          <div className="liverun-toolbar">
            <h2>Tree</h2>
            <span className="muted small">{legend(tree.nodes)}</span>
            <span className="spacer" />
            <div className="segmented" role="group" aria-label="View">
              <button type="button" aria-pressed={view === "graph"} onClick={() => setMode("graph")}>
                Graph
              </button>
              <button type="button" aria-pressed={view === "outline"} onClick={() => setMode("outline")}>
                Outline
              </button>
            </div>
          </div>
          <RunTreeView tree={tree} selected={selected} onSelect={setSelected} mode={view} height={narrow ? 460 : 560} />
        </section>
        {node && (
          <NodePanel
            key={node.key}
            runId={runId}
            poolId={tree.run.pool_id}
            node={node}
            endpoints={live.endpoints}
            narrow={narrow}
            onClose={() => setSelected(null)}
            onRerun={live.resume}
          />
        )}
      </div>

      <EventLog log={live.log} stats={live.stats} />
    </div>
  );
}

function legend(nodes: TreeNode[]): string {
  const counts = new Map<string, number>();
  for (const n of nodes) counts.set(n.status, (counts.get(n.status) ?? 0) + 1);
  return [...counts.entries()].map(([status, count]) => `${count} ${status}`).join(" · ");
}

interface HeaderProps {
  tree: LiveTree;
  connection: ConnectionState;
  onCancelled: () => void;
  children?: ReactNode;
}

function RunHeader({ tree, connection, onCancelled, children }: HeaderProps) {
  const run = tree.run;
  const cancel = useMutation({
    mutationFn: () => api(`/api/runs/${run.id}/cancel`, { method: "POST" }),
    onSuccess: onCancelled,
  });
  const facts: [string, ReactNode, string?][] = [
    ["Policy", run.policy || "–"],
    ["Pool", run.pool_id ?? "–"],
    ["Owner", run.owner || "–"],
    ["Started", when(run.started_at)],
    ["Nodes", tree.nodes.length],
    ["Tokens", tokens(run.tokens_in + run.tokens_out), `${run.tokens_in} in, ${run.tokens_out} out`],
    ["Cost", usd(run.cost_usd)],
    ["Latency", seconds(run.latency_s)],
  ];
  return (
    <header className="liverun-head panel">
      <div className="liverun-title">
        <h1>
          Run #{run.id}
          <span className="status-wrap">
            <span className={`status ${run.status}`} data-testid="run-status" data-status={run.status}>
              {run.status}
            </span>
          </span>
        </h1>
        <span
          className={`liverun-conn conn-${connection}`}
          data-testid="connection-state"
          data-state={connection}
          role="status"
          aria-live="polite"
        >
          <span className="dot" aria-hidden="true" />
          {CONNECTION_TEXT[connection]}
        </span>
        <span className="spacer" />
        <Link
          to={`/${query({ task: run.task_id, pool: run.pool_id })}`}
          data-testid="run-again"
          title="Another run of this task, with other settings"
        >
          Run again
        </Link>
        {(run.status === "running" || run.status === "pending") && (
          <button type="button" className="danger" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
            {cancel.isPending ? "Cancelling…" : "Cancel run"}
          </button>
        )}
      </div>
      <p className="liverun-task" title={run.task_text}>
        {run.task_text}
      </p>
      <dl className="liverun-facts">
        {facts.map(([name, value, title]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd title={title}>{value}</dd>
          </div>
        ))}
      </dl>
      {cancel.isError && <ErrorText error={cancel.error} />}
      {children}
    </header>
  );
}
