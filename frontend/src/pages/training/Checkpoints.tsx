// The checkpoints training made, their headline metrics and lineage; promote one to the
// default of its kind.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, fetchEvery } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Checkpoint } from "../../api/types";
import { Scrollable } from "../../components/Scrollable";
import { Empty, ErrorText, Loading } from "../../components/States";
import { when } from "../../lib/format";
import { metricSummary } from "../../lib/trainingSocket";
import { KIND_LABEL, lineageSummary } from "./config";

export function Checkpoints() {
  const client = useQueryClient();
  const checkpoints = useQuery({
    queryKey: keys.training.checkpoints,
    queryFn: ({ signal }) => fetchEvery<Checkpoint>("/api/checkpoints", {}, signal),
  });
  const promote = useMutation({
    mutationFn: (id: number) => api<Checkpoint>(`/api/checkpoints/${id}/promote`, { method: "POST" }),
    onSettled: () => client.invalidateQueries({ queryKey: keys.training.checkpoints }),
  });
  return (
    <section className="panel" aria-label="Checkpoints">
      <h2>Checkpoints</h2>
      {checkpoints.isPending && <Loading what="Loading checkpoints" />}
      {checkpoints.isError && <ErrorText error={checkpoints.error} />}
      <ErrorText error={promote.error} />
      {checkpoints.data && checkpoints.data.items.length === 0 && (
        <Empty title="No checkpoint yet">
          <p>Every training job that finishes keeps one; the first of each kind becomes the default.</p>
        </Empty>
      )}
      {checkpoints.data && checkpoints.data.items.length > 0 && (
        <Scrollable className="table-wrap" label="Checkpoints">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Metrics</th>
                <th scope="col">Trained on</th>
                <th scope="col">Created</th>
                <th scope="col">Default</th>
              </tr>
            </thead>
            <tbody>
              {checkpoints.data.items.map((c) => (
                <tr key={c.id} data-testid="checkpoint-row" data-checkpoint-id={c.id} data-default={c.is_default}>
                  <th scope="row">{c.name}</th>
                  <td>{KIND_LABEL[c.kind] ?? c.kind}</td>
                  <td className="metrics small">
                    {metricSummary(c.metrics).map(([key, value]) => (
                      <span key={key}>
                        {key} <b>{value}</b>
                      </span>
                    ))}
                  </td>
                  <td className="small">{lineageSummary(c.lineage)}</td>
                  <td className="small">{when(c.created_at)}</td>
                  <td>
                    {c.is_default ? (
                      <span className="status succeeded">default</span>
                    ) : (
                      <button
                        type="button"
                        data-testid="promote"
                        disabled={promote.isPending}
                        onClick={() => promote.mutate(c.id)}
                        aria-label={`Promote ${c.name} to the default ${KIND_LABEL[c.kind] ?? c.kind}`}
                      >
                        Promote to default
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scrollable>
      )}
    </section>
  );
}
