import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useSearchParams } from "react-router";

import { api, fetchAll } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Admissibility, Endpoint, Pool, Primitive } from "../api/types";
import { atLeast, useMe } from "../auth";
import { Scrollable } from "../components/Scrollable";
import { Empty, ErrorText, Loading } from "../components/States";
import { Calibration } from "./pools/Calibration";
import { NewEndpoint } from "./pools/NewEndpoint";
import "./Pools.css";

function price(perMillion: number | null | undefined): string {
  return perMillion === null || perMillion === undefined ? "–" : `$${perMillion}`;
}

export default function PoolsPage() {
  const me = useMe();
  const [params, setParams] = useSearchParams();
  const pools = useQuery({
    queryKey: keys.pools.list,
    queryFn: ({ signal }) => fetchAll<Pool>("/api/pools", {}, signal),
  });
  if (pools.isPending) return <Loading what="Loading pools" />;
  if (pools.isError) return <ErrorText error={pools.error} />;
  const list = pools.data;
  const chosen = list.find((pool) => String(pool.id) === params.get("pool")) ?? list[0];
  return (
    <div className="pools-page stack">
      <div className="row">
        <h1>Pools</h1>
        <span className="spacer" />
        {atLeast(me, "admin") && (
          <a href="/admin/studio/modelpool/" className="small">
            Manage pools and endpoints in the Django admin
          </a>
        )}
      </div>
      {list.length === 0 ? (
        <Empty title="No model pools yet">
          <p>An admin creates pools, endpoints and primitives in the Django admin or through the API.</p>
        </Empty>
      ) : (
        <>
          <div className="tabs" role="tablist" aria-label="Pools">
            {list.map((pool) => (
              <button
                key={pool.id}
                type="button"
                role="tab"
                aria-selected={pool.id === chosen.id}
                onClick={() => setParams({ pool: String(pool.id) })}
              >
                {pool.name}
              </button>
            ))}
          </div>
          <PoolGrid pool={chosen} canEdit={atLeast(me, "admin")} />
        </>
      )}
    </div>
  );
}

interface Cell {
  endpoint: Endpoint;
  primitive: Primitive;
  row?: Admissibility;
}

function PoolGrid({ pool, canEdit }: { pool: Pool; canEdit: boolean }) {
  const client = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  const endpoints = useQuery({
    queryKey: keys.pools.endpoints(pool.id),
    queryFn: ({ signal }) => fetchAll<Endpoint>(`/api/pools/${pool.id}/endpoints`, {}, signal),
  });
  const primitives = useQuery({
    queryKey: keys.primitives,
    queryFn: ({ signal }) => fetchAll<Primitive>("/api/primitives", {}, signal),
  });
  const admissible = useQuery({
    queryKey: keys.pools.admissibility(pool.id),
    queryFn: ({ signal }) => fetchAll<Admissibility>("/api/admissibility", { pool_id: pool.id }, signal),
  });
  const toggle = useMutation({
    mutationFn: async ({ endpoint, primitive, row }: Cell) => {
      if (row) return api(`/api/admissibility/${row.id}`, { method: "PATCH", body: { allowed: !row.allowed } });
      return api("/api/admissibility", {
        method: "POST",
        body: { endpoint_id: endpoint.id, primitive_id: primitive.id },
      });
    },
    onMutate: () => setError(null),
    onError: setError,
    onSettled: () => client.invalidateQueries({ queryKey: keys.pools.admissibility(pool.id) }),
  });

  if (endpoints.isPending || primitives.isPending || admissible.isPending) return <Loading what="Loading the pool" />;
  const failed = endpoints.error ?? primitives.error ?? admissible.error;
  if (failed) return <ErrorText error={failed} />;
  const rows = admissible.data ?? [];
  const allowedCount = rows.filter((row) => row.allowed).length;

  return (
    <section className="stack">
      {pool.description && <p className="muted">{pool.description}</p>}
      <Calibration key={pool.id} pool={pool} canEdit={canEdit} />
      <p className="small muted">
        {endpoints.data?.length ?? 0} endpoints · {allowedCount} admissible (model, primitive) pairs
        {canEdit ? " · click a cell to allow or forbid a pair" : ""}
      </p>
      <ErrorText error={error} />
      {endpoints.data?.length === 0 ? (
        <Empty title="This pool has no endpoints">
          <p>
            An admin adds endpoints (any litellm model string, with its prices and primitives) below, in the Django
            admin or through the API.
          </p>
        </Empty>
      ) : (
        <Grid
          endpoints={endpoints.data ?? []}
          primitives={primitives.data ?? []}
          rows={rows}
          canEdit={canEdit}
          busy={toggle.isPending}
          onToggle={(cell) => toggle.mutate(cell)}
        />
      )}
      {canEdit && <NewEndpoint poolId={pool.id} primitives={primitives.data ?? []} />}
      <p className="small muted">API keys are write-only: the studio never shows them, only whether one is stored.</p>
    </section>
  );
}

interface GridProps {
  endpoints: Endpoint[];
  primitives: Primitive[];
  rows: Admissibility[];
  /** Admins toggle a cell; everyone else reads it. */
  canEdit: boolean;
  busy: boolean;
  onToggle: (cell: Cell) => void;
}

/** The admissibility grid: an endpoint per row, a primitive per column. */
function Grid({ endpoints, primitives, rows, canEdit, busy, onToggle }: GridProps) {
  const byPair = new Map(rows.map((row) => [`${row.endpoint_id}/${row.primitive_id}`, row]));
  return (
    <Scrollable className="table-wrap" label="Admissibility grid">
      <table className="grid" data-testid="admissibility-grid">
        <thead>
          <tr>
            <th scope="col">Endpoint</th>
            <th scope="col" className="num">
              $ / M in
            </th>
            <th scope="col" className="num">
              $ / M out
            </th>
            <th scope="col">Key</th>
            {primitives.map((primitive) => (
              <th key={primitive.id} scope="col" className="prim" title={primitive.description}>
                {primitive.name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {endpoints.map((endpoint) => (
            <tr key={endpoint.id} className={endpoint.enabled ? "" : "disabled"}>
              <th scope="row">
                <div>{endpoint.name}</div>
                <div className="mono small muted">{endpoint.model}</div>
                {!endpoint.enabled && <span className="badge">disabled</span>}
              </th>
              <td className="num">{price(endpoint.input_cost_per_mtok)}</td>
              <td className="num">{price(endpoint.output_cost_per_mtok)}</td>
              <td>
                {endpoint.has_api_key ? <span className="badge">stored</span> : <span className="muted">none</span>}
              </td>
              {primitives.map((primitive) => {
                const row = byPair.get(`${endpoint.id}/${primitive.id}`);
                const allowed = row?.allowed ?? false;
                const label = `${endpoint.name} with ${primitive.name}: ${allowed ? "admissible" : "not admissible"}`;
                return (
                  <td key={primitive.id} className="cell">
                    {canEdit ? (
                      <button
                        type="button"
                        className={allowed ? "cellbtn on" : "cellbtn"}
                        aria-pressed={allowed}
                        aria-label={label}
                        title={label}
                        disabled={busy}
                        onClick={() => onToggle({ endpoint, primitive, row })}
                      >
                        {allowed ? "✓" : "·"}
                      </button>
                    ) : (
                      <span className={allowed ? "cellbtn on" : "cellbtn"} role="img" aria-label={label} title={label}>
                        {allowed ? "✓" : "·"}
                      </span>
                    )}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </Scrollable>
  );
}
