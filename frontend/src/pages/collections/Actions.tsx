// A collection's buttons: Cancel while it is queued or running; Resume once it stopped, was
// cancelled or failed, optionally with a larger budget (a budget not above its spend is refused
// beside the field).
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";

import { api, fieldErrors, type Page } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Collection, ResumeIn } from "../../api/types";
import { ErrorText, FieldNote } from "../../components/States";
import { ACTIVE, RESUMABLE } from "../../lib/collections";

export function Actions({ collection }: { collection: Collection }) {
  const client = useQueryClient();
  const noteId = useId();
  const [budget, setBudget] = useState("");
  const saved = (row: Collection) => {
    // Every cached page shows the row as the server now has it; the lists then refresh (and poll while it runs).
    client.setQueriesData<Page<Collection>>({ queryKey: keys.collections.all }, (page) =>
      page ? { ...page, items: page.items.map((each) => (each.id === row.id ? row : each)) } : page,
    );
    void client.invalidateQueries({ queryKey: keys.collections.all });
  };
  const cancel = useMutation({
    mutationFn: () => api<Collection>(`/api/collections/${collection.id}/cancel`, { method: "POST" }),
    onSuccess: saved,
  });
  const resume = useMutation({
    mutationFn: () => {
      const body: ResumeIn = budget.trim() ? { budget_usd: Number(budget) } : {};
      return api<Collection>(`/api/collections/${collection.id}/resume`, { method: "POST", body });
    },
    onSuccess: (row) => {
      setBudget("");
      saved(row);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    resume.mutate();
  };
  const budgetError = fieldErrors(resume.error).budget_usd;

  if (ACTIVE.has(collection.status))
    return (
      <div className="stack">
        <button
          type="button"
          className="danger"
          aria-label={`Cancel collection #${collection.id}`}
          disabled={cancel.isPending}
          onClick={() => cancel.mutate()}
        >
          Cancel
        </button>
        <ErrorText error={cancel.error} />
      </div>
    );
  if (!RESUMABLE.has(collection.status)) return <span className="muted">–</span>;
  return (
    <form className="resume stack" onSubmit={submit}>
      <div className="row">
        <input
          type="number"
          min={0}
          step="any"
          value={budget}
          placeholder="new budget $"
          aria-label={`New budget for collection #${collection.id} in dollars (optional)`}
          aria-invalid={budgetError ? true : undefined}
          aria-describedby={budgetError ? noteId : undefined}
          onChange={(e) => {
            setBudget(e.target.value);
            if (resume.isError) resume.reset();
          }}
        />
        <button type="submit" aria-label={`Resume collection #${collection.id}`} disabled={resume.isPending}>
          Resume
        </button>
      </div>
      <FieldNote id={noteId} message={budgetError} />
      {!budgetError && <ErrorText error={resume.error} />}
    </form>
  );
}
