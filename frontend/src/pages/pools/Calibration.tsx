// The pool's calibration source (docs/api.md, "Pool calibration"): the recorded-outcome
// source whose rows for the pool's models a learned run on the pool calibrates on.
// Everyone reads it; admins set or clear it.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";

import { api } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Pool, PoolPatch } from "../../api/types";
import { ErrorText } from "../../components/States";

/** Render with `key={pool.id}`: the draft belongs to one pool. */
export function Calibration({ pool, canEdit }: { pool: Pool; canEdit: boolean }) {
  const client = useQueryClient();
  const headingId = useId();
  const inputId = useId();
  const errorId = useId();
  const [draft, setDraft] = useState(pool.calibration_source);
  const save = useMutation({
    mutationFn: (changes: PoolPatch) => api<Pool>(`/api/pools/${pool.id}`, { method: "PATCH", body: changes }),
    onSuccess: (saved) => {
      client.setQueryData<Pool[]>(keys.pools.list, (list) =>
        list?.map((each) => (each.id === saved.id ? saved : each)),
      );
      setDraft(saved.calibration_source);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate({ calibration_source: draft.trim() });
  };
  const source = pool.calibration_source;

  return (
    <section className="panel stack pool-calibration" aria-labelledby={headingId} data-testid="calibration">
      <h2 id={headingId}>Calibration</h2>
      <p aria-live="polite" data-testid="calibration-source">
        {source ? (
          <>
            <span className="mono">{source}</span>: a learned run on this pool calibrates on this source&apos;s recorded
            outcomes of the pool&apos;s models.
          </>
        ) : (
          "None: a learned run gives a pair its checkpoint never saw the mean accuracy of the checkpoint's pool."
        )}
      </p>
      {canEdit && (
        <>
          <form className="row" onSubmit={submit}>
            <label htmlFor={inputId}>Calibration source</label>
            <input
              id={inputId}
              value={draft}
              maxLength={50}
              placeholder="a source of manage.py import_outcomes"
              aria-invalid={save.isError}
              aria-describedby={save.isError ? errorId : undefined}
              onChange={(event) => {
                setDraft(event.target.value);
                save.reset();
              }}
            />
            <button type="submit" className="primary" disabled={save.isPending || !draft.trim()}>
              Save
            </button>
            <button
              type="button"
              disabled={save.isPending || !source}
              onClick={() => save.mutate({ calibration_source: "" })}
            >
              Clear
            </button>
          </form>
          <div id={errorId}>
            <ErrorText error={save.error} />
          </div>
        </>
      )}
    </section>
  );
}
