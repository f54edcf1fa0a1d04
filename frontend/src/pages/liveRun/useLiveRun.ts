// A run as it happens: the tree snapshot (GET /api/runs/{id}/tree), the run's WebSocket with
// its reconnects and gap fills (lib/runSocket), and the snapshot refetched for what events
// do not carry (attempt rows, rolled-up totals). The tree shown is the latest snapshot with
// every event received since folded in on top (lib/eventTree).
import { useQuery, useQueryClient, type UseQueryResult } from "@tanstack/react-query";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";

import { api, fetchAll } from "../../api/client";
import type { RunEventMessage } from "../../api/events";
import { keys } from "../../api/queryKeys";
import type { Endpoint, Tree } from "../../api/types";
import { rebase } from "../../lib/eventTree";
import type { LiveTree } from "../../lib/liveTree";
import { RunSocket } from "../../lib/runSocket";
import type { ConnectionState, SocketStats } from "../../lib/runSocketOptions";
import { appendDelta, forget, withStreaming, type Streamed } from "../../lib/streaming";

/** Events that change details the events themselves do not carry (attempt rows, rolled-up totals). */
const DETAIL_EVENTS = /^(attempt\.|node\.(succeeded|failed|skipped|cancelled|noted)|run\.(finished|verified))/;
/** Events after which a node's streamed text gives way to the output they carry. */
const ATTEMPT_ENDED = /^(attempt\.finished|node\.(succeeded|failed|answered|skipped|cancelled))$/;
/** The snapshot is refetched at most this often while events arrive. */
export const REFETCH_MS = 1200;
const SOON_MS = 250;
const NO_ENDPOINTS: Endpoint[] = [];

export interface LiveRun {
  /** The snapshot's query: pending, failed, refetching. */
  snapshot: UseQueryResult<Tree>;
  /** The snapshot with the events since applied, and the text a working node's model has
   * written so far as its output (lib/streaming); null until the first snapshot. */
  tree: LiveTree | null;
  /** Every event received, in order. */
  log: RunEventMessage[];
  connection: ConnectionState;
  stats: SocketStats | null;
  /** The run's pool's endpoints (every page). */
  endpoints: Endpoint[];
  /** Refetch the snapshot soon (after a cancel or a re-run). */
  refreshSoon: () => void;
  /** The run was made live again from this page (a re-run): listen again. */
  resume: () => void;
}

export function useLiveRun(runId: number): LiveRun {
  const client = useQueryClient();
  const snapshot = useQuery({
    queryKey: keys.runs.tree(runId),
    queryFn: ({ signal }) => api<Tree>(`/api/runs/${runId}/tree`, { signal }),
  });
  const poolId = snapshot.data?.run.pool_id ?? null;
  const endpoints = useQuery({
    queryKey: keys.pools.endpoints(poolId ?? 0),
    queryFn: ({ signal }) => fetchAll<Endpoint>(`/api/pools/${poolId}/endpoints`, {}, signal),
    enabled: poolId !== null,
    staleTime: 60_000,
  });
  const models = useMemo(
    () => Object.fromEntries((endpoints.data ?? []).map((e) => [e.id, e.model])) as Record<number, string>,
    [endpoints.data],
  );

  const [log, setLog] = useState<RunEventMessage[]>([]);
  const [connection, setConnection] = useState<ConnectionState>("connecting");
  const [stats, setStats] = useState<SocketStats | null>(null);
  const [streamed, setStreamed] = useState<Streamed>({});
  const tree = useMemo(
    () => (snapshot.data ? withStreaming(rebase(snapshot.data, log, { models }), streamed) : null),
    [snapshot.data, log, models, streamed],
  );

  // The snapshot is refetched at most every REFETCH_MS, or sooner when asked.
  const timer = useRef<number | null>(null);
  const scheduleRefetch = useCallback(
    (soon: boolean) => {
      if (timer.current !== null) {
        if (!soon) return;
        window.clearTimeout(timer.current);
      }
      timer.current = window.setTimeout(
        () => {
          timer.current = null;
          void client.invalidateQueries({ queryKey: keys.runs.tree(runId), exact: true });
        },
        soon ? SOON_MS : REFETCH_MS,
      );
    },
    [client, runId],
  );
  useEffect(
    () => () => {
      if (timer.current !== null) window.clearTimeout(timer.current);
    },
    [],
  );

  // The socket opens once the first snapshot is in, and replays the run's events from the
  // first (the event log shows them all; those in the snapshot change nothing).
  const socket = useRef<RunSocket | null>(null);
  const loaded = snapshot.data !== undefined; // stays true if a later refetch fails
  useEffect(() => {
    if (!loaded) return;
    const live = new RunSocket({
      runId,
      after: 0,
      onEvent: (event) => {
        setLog((events) => [...events, event]);
        const { key: nodeKey, node } = event.payload as { key?: unknown; node?: unknown };
        const key = event.type === "attempt.finished" ? node : nodeKey;
        if (ATTEMPT_ENDED.test(event.type) && typeof key === "string") setStreamed((held) => forget(held, key));
        if (DETAIL_EVENTS.test(event.type)) scheduleRefetch(event.type === "run.finished");
      },
      onDelta: (delta) => setStreamed((held) => appendDelta(held, delta)),
      onState: (state, next) => {
        setConnection(state);
        setStats(next);
      },
    });
    socket.current = live;
    live.start();
    return () => {
      live.stop();
      if (socket.current === live) socket.current = null;
    };
  }, [loaded, runId, scheduleRefetch]);

  const refreshSoon = useCallback(() => scheduleRefetch(true), [scheduleRefetch]);
  const resume = useCallback(() => {
    socket.current?.resume();
    scheduleRefetch(true);
  }, [scheduleRefetch]);

  return { snapshot, tree, log, connection, stats, endpoints: endpoints.data ?? NO_ENDPOINTS, refreshSoon, resume };
}
