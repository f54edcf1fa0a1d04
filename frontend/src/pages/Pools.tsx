import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useSearchParams } from "react-router";

import { api, query, type Page } from "../api/client";
import type { Admissibility, Endpoint, Pool, Primitive } from "../api/types";
import { atLeast, useMe } from "../auth";
import { Empty, ErrorText, Loading } from "../components/States";
import "./Pools.css";

function price(perMillion: number | null | undefined): string {
  return perMillion === null || perMillion === undefined ? "–" : `$${perMillion}`;
}

export default function PoolsPage() {
  const me = useMe();
  const [params, setParams] = useSearchParams();
  const pools = useQuery({ queryKey: ["pools", "all"], queryFn: () => api<Page<Pool>>("/api/pools?limit=200") });
  if (pools.isPending) return <Loading what="Loading pools" />;
  if (pools.isError) return <ErrorText error={pools.error} />;
  const list = pools.data.items;
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

function PoolGrid({ pool, canEdit }: { pool: Pool; canEdit: boolean }) {
  const client = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  const endpoints = useQuery({
    queryKey: ["endpoints", pool.id],
    queryFn: () => api<Page<Endpoint>>(`/api/pools/${pool.id}/endpoints?limit=200`),
  });
  const primitives = useQuery({ queryKey: ["primitives"], queryFn: () => api<Page<Primitive>>("/api/primitives?limit=200") });
  const admissible = useQuery({
    queryKey: ["admissibility", pool.id],
    queryFn: () => api<Page<Admissibility>>(`/api/admissibility${query({ pool_id: pool.id, limit: 200 })}`),
  });
  const toggle = useMutation({
    mutationFn: async ({ endpoint, primitive, row }: { endpoint: Endpoint; primitive: Primitive; row?: Admissibility }) => {
      if (row) return api(`/api/admissibility/${row.id}`, { method: "PATCH", body: { allowed: !row.allowed } });
      return api("/api/admissibility", { method: "POST", body: { endpoint_id: endpoint.id, primitive_id: primitive.id } });
    },
    onMutate: () => setError(null),
    onError: setError,
    onSettled: () => client.invalidateQueries({ queryKey: ["admissibility", pool.id] }),
  });

  if (endpoints.isPending || primitives.isPending || admissible.isPending) return <Loading what="Loading the pool" />;
  const failed = endpoints.error ?? primitives.error ?? admissible.error;
  if (failed) return <ErrorText error={failed} />;
  const rows = new Map(admissible.data!.items.map((row) => [`${row.endpoint_id}/${row.primitive_id}`, row]));
  const allowedCount = admissible.data!.items.filter((row) => row.allowed).length;

  return (
    <section className="stack">
      {pool.description && <p className="muted">{pool.description}</p>}
      <p className="small muted">
        {endpoints.data!.count} endpoints · {allowedCount} admissible (model, primitive) pairs
        {admissible.data!.count > 200 && " · the grid shows the first 200 admissibility rows"}
        {canEdit ? " · click a cell to allow or forbid a pair" : ""}
      </p>
      <ErrorText error={error} />
      {endpoints.data!.items.length === 0 ? (
        <Empty title="This pool has no endpoints">
          <p>An admin adds endpoints (any litellm model string, with its prices) in the Django admin or the API.</p>
        </Empty>
      ) : (
        <div className="table-wrap">
          <table className="grid" data-testid="admissibility-grid">
            <thead>
              <tr>
                <th>Endpoint</th>
                <th className="num">$ / M in</th>
                <th className="num">$ / M out</th>
                <th>Key</th>
                {primitives.data!.items.map((primitive) => (
                  <th key={primitive.id} className="prim" title={primitive.description}>
                    {primitive.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {endpoints.data!.items.map((endpoint) => (
                <tr key={endpoint.id} className={endpoint.enabled ? "" : "disabled"}>
                  <th scope="row">
                    <div>{endpoint.name}</div>
                    <div className="mono small muted">{endpoint.model}</div>
                    {!endpoint.enabled && <span className="badge">disabled</span>}
                  </th>
                  <td className="num">{price(endpoint.input_cost_per_mtok)}</td>
                  <td className="num">{price(endpoint.output_cost_per_mtok)}</td>
                  <td>{endpoint.has_api_key ? <span className="badge">stored</span> : <span className="muted">none</span>}</td>
                  {primitives.data!.items.map((primitive) => {
                    const row = rows.get(`${endpoint.id}/${primitive.id}`);
                    const allowed = row?.allowed ?? false;
                    const label = `${endpoint.name} with ${primitive.name}: ${allowed ? "admissible" : "not admissible"}`;
                    return (
                      <td key={primitive.id} className="cell">
                        <button
                          type="button"
                          className={allowed ? "cellbtn on" : "cellbtn"}
                          aria-pressed={allowed}
                          aria-label={label}
                          title={label}
                          disabled={!canEdit || toggle.isPending}
                          onClick={() => toggle.mutate({ endpoint, primitive, row })}
                        >
                          {allowed ? "✓" : "·"}
                        </button>
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {endpoints.data!.count > 200 && <p className="muted small">Showing the first 200 endpoints.</p>}
      <p className="small muted">API keys are write-only: the studio never shows them, only whether one is stored.</p>
    </section>
  );
}
