// Live run: the decomposition tree growing as the run's events arrive over the WebSocket,
// a side panel per node (attempts, re-run with another pair), the final answer, the
// connection state and the event log.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useId, useMemo, useRef, useState } from "react";
import { Link, useParams } from "react-router";

import { ApiError, api, query, type Page } from "../api/client";
import type { Admissibility, Endpoint, SocketEvent, Tree, TreeNode } from "../api/types";
import { pairLabel, RunTreeView, shortModel } from "../components/RunTree";
import { ErrorText, Loading } from "../components/States";
import { applyEvent, rebase, RUN_ENDED, type LiveTree } from "../lib/eventTree";
import { seconds, tokens, usd, when } from "../lib/format";
import { RunSocket, type ConnectionState, type SocketStats } from "../lib/runSocket";
import "./LiveRun.css";

/** Events that change details the events themselves do not carry (attempt rows, rolled-up totals). */
const DETAIL_EVENTS = /^(attempt\.|node\.(succeeded|failed|skipped|cancelled|noted)|run\.finished)/;
const REFETCH_MS = 1200;
const NARROW = "(max-width: 760px)";

function useMedia(queryText: string): boolean {
  const [matches, setMatches] = useState(() => typeof window !== "undefined" && window.matchMedia?.(queryText).matches);
  useEffect(() => {
    const list = window.matchMedia?.(queryText);
    if (!list) return;
    const update = () => setMatches(list.matches);
    update();
    list.addEventListener("change", update);
    return () => list.removeEventListener("change", update);
  }, [queryText]);
  return !!matches;
}

/** Every page of a paged list (the API caps a page at 200). */
async function allPages<T>(path: string, params: Record<string, string | number>): Promise<T[]> {
  const items: T[] = [];
  for (let offset = 0; ; offset += 200) {
    const page = await api<Page<T>>(`${path}${query({ ...params, limit: 200, offset })}`);
    items.push(...page.items);
    if (page.items.length < 200 || items.length >= page.count) return items;
  }
}

function treeError(error: unknown): Error {
  if (error instanceof ApiError && (error.status === 404 || error.status === 403)) {
    return new Error("This run does not exist or is not yours.");
  }
  return error as Error;
}

const CONNECTION_TEXT: Record<ConnectionState, string> = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  offline: "offline, will resume",
  ended: "ended",
  refused: "not allowed to follow this run",
  stopped: "stopped",
};

export default function LiveRunPage() {
  const { runId: raw } = useParams();
  const runId = Number(raw);
  if (!Number.isInteger(runId) || runId <= 0) {
    return (
      <div className="liverun">
        <ErrorText error={new Error("This run does not exist or is not yours.")} />
        <p>
          <Link to="/runs">Back to the runs</Link>
        </p>
      </div>
    );
  }
  return <LiveRun key={runId} runId={runId} />;
}

function LiveRun({ runId }: { runId: number }) {
  const client = useQueryClient();
  const narrow = useMedia(NARROW);
  const [mode, setMode] = useState<"graph" | "outline" | null>(null);
  const view = mode ?? (narrow ? "outline" : "graph");
  const [selected, setSelected] = useState<string | null>(null);

  const treeQuery = useQuery({
    queryKey: ["runs", runId, "tree"],
    queryFn: ({ signal }) => api<Tree>(`/api/runs/${runId}/tree`, { signal }),
  });
  const poolId = treeQuery.data?.run.pool_id ?? null;
  const endpoints = useQuery({
    queryKey: ["pools", poolId, "endpoints", "all"],
    queryFn: () => allPages<Endpoint>(`/api/pools/${poolId}/endpoints`, {}),
    enabled: poolId !== null,
    staleTime: 60_000,
  });
  const models = useMemo(
    () => Object.fromEntries((endpoints.data ?? []).map((e) => [e.id, e.model])) as Record<number, string>,
    [endpoints.data],
  );
  const modelsRef = useRef(models);
  modelsRef.current = models;

  // The live tree: the latest snapshot with every event received since applied on top.
  const logRef = useRef<SocketEvent[]>([]);
  const [log, setLog] = useState<SocketEvent[]>([]);
  const [live, setLive] = useState<LiveTree | null>(null);
  const [connection, setConnection] = useState<ConnectionState>("connecting");
  const [stats, setStats] = useState<SocketStats | null>(null);
  const socketRef = useRef<RunSocket | null>(null);

  useEffect(() => {
    if (treeQuery.data) setLive(rebase(treeQuery.data, logRef.current, { models: modelsRef.current }));
  }, [treeQuery.data]);

  // Details (attempts, totals) come from the tree, refetched at most every REFETCH_MS.
  const refetchTimer = useRef<number | null>(null);
  const scheduleRefetch = useCallback(
    (soon = false) => {
      if (refetchTimer.current !== null) {
        if (!soon) return;
        window.clearTimeout(refetchTimer.current);
      }
      refetchTimer.current = window.setTimeout(() => {
        refetchTimer.current = null;
        void client.invalidateQueries({ queryKey: ["runs", runId, "tree"], exact: true });
      }, soon ? 250 : REFETCH_MS);
    },
    [client, runId],
  );
  useEffect(
    () => () => {
      if (refetchTimer.current !== null) window.clearTimeout(refetchTimer.current);
    },
    [],
  );

  const loaded = treeQuery.data !== undefined; // stays true if a later refetch fails
  useEffect(() => {
    if (!loaded) return;
    const last = logRef.current.length ? logRef.current[logRef.current.length - 1].seq : 0;
    const socket = new RunSocket({
      runId,
      after: last,
      onEvent: (event) => {
        logRef.current = [...logRef.current, event];
        setLog(logRef.current);
        setLive((tree) => (tree ? applyEvent(tree, event, { models: modelsRef.current }) : tree));
        if (DETAIL_EVENTS.test(event.type)) scheduleRefetch(event.type === "run.finished");
      },
      onState: (state, next) => {
        setConnection(state);
        setStats(next);
      },
    });
    socketRef.current = socket;
    socket.start();
    return () => {
      socket.stop();
      if (socketRef.current === socket) socketRef.current = null;
    };
  }, [loaded, runId, scheduleRefetch]);

  const cancel = useMutation({
    mutationFn: () => api(`/api/runs/${runId}/cancel`, { method: "POST" }),
    onSuccess: () => scheduleRefetch(true),
  });

  if (treeQuery.isPending) return <Loading what="Loading the run" />;
  if (treeQuery.isError && !live) {
    return (
      <div className="liverun">
        <ErrorText error={treeError(treeQuery.error)} />
        <p>
          <Link to="/runs">Back to the runs</Link>
        </p>
      </div>
    );
  }
  const tree: LiveTree | null = live;
  if (!tree) return <Loading what="Loading the run" />;
  const run = tree.run;
  const ended = RUN_ENDED.includes(run.status);
  const node = selected ? (tree.nodes.find((n) => n.key === selected) ?? null) : null;

  return (
    <div className="liverun">
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
          <span className={`liverun-conn conn-${connection}`} data-testid="connection-state" data-state={connection} role="status" aria-live="polite">
            <span className="dot" aria-hidden="true" />
            {CONNECTION_TEXT[connection]}
          </span>
          <span className="spacer" />
          <Link to={`/${query({ task: run.task_id, pool: run.pool_id })}`} data-testid="run-again" title="Another run of this task, with other settings">
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
          <div><dt>Policy</dt><dd>{run.policy || "–"}</dd></div>
          <div><dt>Pool</dt><dd>{run.pool_id ?? "–"}</dd></div>
          <div><dt>Owner</dt><dd>{run.owner || "–"}</dd></div>
          <div><dt>Started</dt><dd>{when(run.started_at)}</dd></div>
          <div><dt>Nodes</dt><dd>{tree.nodes.length}</dd></div>
          <div><dt>Tokens</dt><dd title={`${run.tokens_in} in, ${run.tokens_out} out`}>{tokens(run.tokens_in + run.tokens_out)}</dd></div>
          <div><dt>Cost</dt><dd>{usd(run.cost_usd)}</dd></div>
          <div><dt>Latency</dt><dd>{seconds(run.latency_s)}</dd></div>
        </dl>
        {cancel.isError && <ErrorText error={cancel.error} />}
        {treeQuery.isError && <p className="muted small">Could not refresh the details: {(treeQuery.error as Error).message}</p>}
      </header>

      {ended && <FinalAnswer tree={tree} />}

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
            poolId={poolId}
            node={node}
            endpoints={endpoints.data ?? []}
            narrow={narrow}
            onClose={() => setSelected(null)}
            onRerun={() => {
              socketRef.current?.resume();
              scheduleRefetch(true);
            }}
          />
        )}
      </div>

      <EventLog log={log} stats={stats} />
    </div>
  );
}

function legend(nodes: TreeNode[]): string {
  const counts = new Map<string, number>();
  for (const n of nodes) counts.set(n.status, (counts.get(n.status) ?? 0) + 1);
  return [...counts.entries()].map(([status, count]) => `${count} ${status}`).join(" · ");
}

function Verification({ value }: { value: Record<string, unknown> }) {
  const entries = Object.entries(value ?? {});
  if (entries.length === 0) return <p className="muted small">No verification.</p>;
  const correct = value.correct;
  return (
    <div className="verification">
      {typeof correct === "boolean" && (
        <span className={`status ${correct ? "succeeded" : "failed"}`}>{correct ? "correct" : "not correct"}</span>
      )}
      <dl className="kv">
        {entries
          .filter(([k]) => k !== "correct")
          .map(([k, v]) => (
            <div key={k}>
              <dt>{k.replace(/_/g, " ")}</dt>
              <dd>{typeof v === "object" ? JSON.stringify(v) : typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v)}</dd>
            </div>
          ))}
      </dl>
    </div>
  );
}

function FinalAnswer({ tree }: { tree: LiveTree }) {
  const run = tree.run;
  return (
    <section className="panel liverun-final" aria-label="Final answer">
      <div className="row">
        <h2>Final answer</h2>
        <span className={`status ${run.status}`}>{run.status}</span>
        {run.end_reason && <span className="muted small">{run.end_reason}</span>}
      </div>
      <pre data-testid="final-answer">{run.final_answer || "(no answer)"}</pre>
      <div className="grid2">
        <div>
          <h3>Verification</h3>
          <Verification value={run.verification} />
        </div>
        <div>
          <h3>Totals</h3>
          <dl className="kv">
            <div><dt>Tokens in</dt><dd>{tokens(run.tokens_in)}</dd></div>
            <div><dt>Tokens out</dt><dd>{tokens(run.tokens_out)}</dd></div>
            <div><dt>Cost</dt><dd>{usd(run.cost_usd)}</dd></div>
            <div><dt>Latency (sum of calls)</dt><dd>{seconds(run.latency_s)}</dd></div>
            <div><dt>Finished</dt><dd>{when(run.finished_at)}</dd></div>
          </dl>
        </div>
      </div>
    </section>
  );
}

// The node's side panel

interface PanelProps {
  runId: number;
  poolId: number | null;
  node: TreeNode;
  endpoints: Endpoint[];
  narrow: boolean;
  onClose: () => void;
  onRerun: () => void;
}

function NodePanel({ runId, poolId, node, endpoints, narrow, onClose, onRerun }: PanelProps) {
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const closeRef = useRef(onClose);
  closeRef.current = onClose;

  useEffect(() => {
    heading.current?.focus();
    const key = node.key;
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") {
        event.preventDefault();
        closeRef.current();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => {
      document.removeEventListener("keydown", onKey);
      // back to the node it was opened from
      window.setTimeout(() => {
        const back = document.querySelector<HTMLElement>(`[data-testid="tree-node"][data-key="${CSS.escape(key)}"]`);
        back?.focus({ preventScroll: true });
      }, 0);
    };
  }, []);

  const own = node.tokens_in + node.tokens_out;
  return (
    <>
      {narrow && <div className="drawer-backdrop" onClick={onClose} aria-hidden="true" />}
      <aside
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
            {pairLabel(node) && <span className="badge pair">{pairLabel(node)}</span>}
            {node.item_id && <span className="badge" title="recorded item">{node.item_id}</span>}
            {node.depends_on.length > 0 && <span className="muted">depends on {node.depends_on.join(", ")}</span>}
          </div>

          <h3>Prompt</h3>
          <pre>{node.text || "(empty)"}</pre>
          {node.output && (
            <>
              <h3>Output</h3>
              <pre>{node.output}</pre>
            </>
          )}
          <h3>Answer</h3>
          {node.answer ? <pre className="answer">{node.answer}</pre> : <p className="muted small">No answer yet.</p>}
          <h3>Verification</h3>
          <Verification value={node.verification} />

          <h3>Totals</h3>
          <dl className="kv">
            <div><dt>This node</dt><dd>{tokens(own)} tok · {usd(node.cost_usd)} · {seconds(node.latency_s)}</dd></div>
            <div>
              <dt>With its subtree</dt>
              <dd>
                {tokens(node.subtree.tokens_in + node.subtree.tokens_out)} tok · {usd(node.subtree.cost_usd)} · {seconds(node.subtree.latency_s)}
              </dd>
            </div>
          </dl>

          {node.best_of && (
            <>
              <h3>Best of N</h3>
              <pre>{JSON.stringify(node.best_of, null, 2)}</pre>
            </>
          )}

          <h3>Attempts ({node.attempts.length})</h3>
          {node.attempts.length === 0 ? (
            <p className="muted small">No model call on this node{node.kind === "aggregate" ? ": it composes its children's answers" : " yet"}.</p>
          ) : (
            <ol className="attempts">
              {node.attempts.map((a) => (
                <li key={a.number} className={`attempt st-${a.status}`}>
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
              ))}
            </ol>
          )}

          {node.kind !== "aggregate" && (
            <Rerun runId={runId} poolId={poolId} node={node} endpoints={endpoints} onDone={onRerun} />
          )}
        </div>
      </aside>
    </>
  );
}

function Rerun({ runId, poolId, node, endpoints, onDone }: { runId: number; poolId: number | null; node: TreeNode; endpoints: Endpoint[]; onDone: () => void }) {
  const client = useQueryClient();
  const selectId = useId();
  const pairs = useQuery({
    queryKey: ["admissibility", poolId, "all"],
    queryFn: () => allPages<Admissibility>("/api/admissibility", { pool_id: poolId! }),
    enabled: poolId !== null,
    staleTime: 60_000,
  });
  const options = useMemo(() => {
    const enabled = new Map(endpoints.filter((e) => e.enabled).map((e) => [e.id, e]));
    return (pairs.data ?? [])
      .filter((p) => p.allowed && enabled.has(p.endpoint_id) && p.primitive_name !== "plan")
      .map((p) => ({
        value: `${p.endpoint_id}|${p.primitive_name}`,
        endpointId: p.endpoint_id,
        primitive: p.primitive_name,
        label: `${shortModel(enabled.get(p.endpoint_id)!.model)} · ${p.primitive_name}`,
        current: p.endpoint_id === node.endpoint_id && p.primitive_name === node.primitive,
      }))
      .sort((a, b) => a.label.localeCompare(b.label));
  }, [pairs.data, endpoints, node.endpoint_id, node.primitive]);
  const [choice, setChoice] = useState("");
  const value = choice || options.find((o) => !o.current)?.value || "";
  const rerun = useMutation({
    mutationFn: (option: { endpointId: number; primitive: string }) =>
      api<{ attempt: number }>(`/api/runs/${runId}/nodes/${encodeURIComponent(node.key)}/rerun`, {
        method: "POST",
        body: { endpoint_id: option.endpointId, primitive: option.primitive },
      }),
    onSuccess: () => {
      onDone();
      void client.invalidateQueries({ queryKey: ["runs", runId, "tree"], exact: true });
    },
  });

  return (
    <section className="rerun" aria-label="Re-run with another pair">
      <h3>Re-run with another pair</h3>
      {poolId === null ? (
        <p className="muted small">This run has no pool.</p>
      ) : pairs.isPending ? (
        <Loading what="Loading the pool's pairs" />
      ) : pairs.isError ? (
        <ErrorText error={pairs.error} />
      ) : options.length === 0 ? (
        <p className="muted small">The run's pool has no admissible (model, primitive) pair.</p>
      ) : (
        <form
          className="stack"
          onSubmit={(event) => {
            event.preventDefault();
            const option = options.find((o) => o.value === value);
            if (option) rerun.mutate(option);
          }}
        >
          <label htmlFor={selectId}>Admissible pair of pool {poolId}</label>
          <select id={selectId} value={value} onChange={(event) => setChoice(event.target.value)}>
            {options.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
                {o.current ? " (current)" : ""}
              </option>
            ))}
          </select>
          <div className="row">
            <button type="submit" className="primary" disabled={rerun.isPending || !value}>
              {rerun.isPending ? "Queuing…" : "Re-run this node"}
            </button>
            {rerun.isSuccess && (
              <span className="muted small" role="status">
                Queued as attempt #{rerun.data.attempt}; its answer replaces this node's and what was composed from it.
              </span>
            )}
          </div>
          {rerun.isError && <ErrorText error={rerun.error} />}
        </form>
      )}
    </section>
  );
}

// The event log

function eventSummary(event: SocketEvent): string {
  const p = event.payload ?? {};
  const key = (p.key ?? p.node) as string | undefined;
  const bits: string[] = [];
  if (key) bits.push(key);
  if (typeof p.status === "string" && event.type !== "node.created") bits.push(p.status);
  if (typeof p.primitive === "string") bits.push(p.primitive);
  if (typeof p.reason === "string" && p.reason) bits.push(p.reason.slice(0, 80));
  return bits.join(" · ");
}

function EventLog({ log, stats }: { log: SocketEvent[]; stats: SocketStats | null }) {
  const listRef = useRef<HTMLOListElement>(null);
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const list = listRef.current;
    if (open && list) list.scrollTop = list.scrollHeight;
  }, [log.length, open]);
  return (
    <details className="panel liverun-log" onToggle={(event) => setOpen((event.target as HTMLDetailsElement).open)}>
      <summary>
        Event log <span className="muted small">({log.length} events{stats ? `, up to #${stats.lastSeq}` : ""}
        {stats && stats.duplicates > 0 ? `, ${stats.duplicates} duplicates dropped` : ""}
        {stats && stats.gapsFilled > 0 ? `, ${stats.gapsFilled} gaps filled` : ""}
        {stats && stats.connections > 1 ? `, ${stats.connections - 1} reconnects` : ""})</span>
      </summary>
      <ol ref={listRef} className="event-log" data-testid="event-log">
        {log.map((event) => (
          <li key={event.seq} data-seq={event.seq}>
            <span className="seq mono">#{event.seq}</span>
            <span className="type mono">{event.type}</span>
            <span className="what">{eventSummary(event)}</span>
            <time className="muted" dateTime={event.created_at}>
              {event.created_at ? new Date(event.created_at).toLocaleTimeString() : ""}
            </time>
          </li>
        ))}
      </ol>
    </details>
  );
}
