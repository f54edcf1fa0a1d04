// Re-run one node with another admissible (model, primitive) pair of the run's pool.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useMemo, useState } from "react";

import { api, fetchAll } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Admissibility, Endpoint, TreeNode } from "../../api/types";
import { shortModel } from "../../components/RunTree";
import { ErrorText, Loading } from "../../components/States";

interface Option {
  value: string;
  endpointId: number;
  primitive: string;
  label: string;
  current: boolean;
}

/** The pairs a node may be re-run with: allowed, on an enabled endpoint, not the planner. */
export function rerunOptions(pairs: Admissibility[], endpoints: Endpoint[], node: TreeNode): Option[] {
  const enabled = new Map(endpoints.filter((e) => e.enabled).map((e) => [e.id, e]));
  return pairs
    .filter((p) => p.allowed && enabled.has(p.endpoint_id) && p.primitive_name !== "plan")
    .map((p) => ({
      value: `${p.endpoint_id}|${p.primitive_name}`,
      endpointId: p.endpoint_id,
      primitive: p.primitive_name,
      label: `${shortModel(enabled.get(p.endpoint_id)?.model)} · ${p.primitive_name}`,
      current: p.endpoint_id === node.endpoint_id && p.primitive_name === node.primitive,
    }))
    .sort((a, b) => a.label.localeCompare(b.label));
}

interface RerunProps {
  runId: number;
  poolId: number | null;
  node: TreeNode;
  endpoints: Endpoint[];
  onDone: () => void;
}

export function Rerun({ runId, poolId, node, endpoints, onDone }: RerunProps) {
  const pairs = useQuery({
    queryKey: keys.pools.admissibility(poolId ?? 0),
    queryFn: ({ signal }) => fetchAll<Admissibility>("/api/admissibility", { pool_id: poolId }, signal),
    enabled: poolId !== null,
    staleTime: 60_000,
  });
  const options = useMemo(() => rerunOptions(pairs.data ?? [], endpoints, node), [pairs.data, endpoints, node]);

  let body;
  if (poolId === null) body = <p className="muted small">This run has no pool.</p>;
  else if (pairs.isPending) body = <Loading what="Loading the pool's pairs" />;
  else if (pairs.isError) body = <ErrorText error={pairs.error} />;
  else if (options.length === 0)
    body = <p className="muted small">The run&apos;s pool has no admissible (model, primitive) pair.</p>;
  else body = <RerunForm runId={runId} poolId={poolId} node={node} options={options} onDone={onDone} />;
  return (
    <section className="rerun" aria-label="Re-run with another pair">
      <h3>Re-run with another pair</h3>
      {body}
    </section>
  );
}

interface FormProps {
  runId: number;
  poolId: number;
  node: TreeNode;
  options: Option[];
  onDone: () => void;
}

function RerunForm({ runId, poolId, node, options, onDone }: FormProps) {
  const client = useQueryClient();
  const selectId = useId();
  const [choice, setChoice] = useState("");
  const value = choice || options.find((o) => !o.current)?.value || "";
  const rerun = useMutation({
    mutationFn: (option: Option) =>
      api<{ attempt: number }>(`/api/runs/${runId}/nodes/${encodeURIComponent(node.key)}/rerun`, {
        method: "POST",
        body: { endpoint_id: option.endpointId, primitive: option.primitive },
      }),
    onSuccess: () => {
      onDone();
      void client.invalidateQueries({ queryKey: keys.runs.tree(runId), exact: true });
    },
  });
  return (
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
            Queued as attempt #{rerun.data.attempt}; its answer replaces this node&apos;s and what was composed from it.
          </span>
        )}
      </div>
      {rerun.isError && <ErrorText error={rerun.error} />}
    </form>
  );
}
