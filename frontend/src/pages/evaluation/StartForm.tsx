// Start an evaluation: its size (preset), the outcome file to test on, the seed.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";

import { api, withFirst, type Page } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Evaluation, EvaluationOptions } from "../../api/types";
import { SeedField } from "../../components/JobForm";
import { ErrorText } from "../../components/States";

export function StartForm({ onStarted }: { onStarted: (id: number) => void }) {
  const client = useQueryClient();
  const options = useQuery({
    queryKey: keys.evaluations.options,
    queryFn: () => api<EvaluationOptions>("/api/evaluations/options"),
  });
  const [preset, setPreset] = useState<"quick" | "full">("quick");
  const [outcome, setOutcome] = useState("");
  const [seed, setSeed] = useState(0);
  const start = useMutation({
    mutationFn: () =>
      api<Evaluation>("/api/evaluations", {
        method: "POST",
        body: { preset, seed, outcomes: outcome ? [outcome] : [] },
      }),
    onSuccess: (created) => {
      // The list shows the new evaluation at once (and so keeps looking while it runs).
      client.setQueryData<Page<Evaluation>>(keys.evaluations.list, (page) => withFirst(page, created));
      void client.invalidateQueries({ queryKey: keys.evaluations.list });
      onStarted(created.id);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate();
  };
  const quick = options.data?.presets.quick;
  const defaults = options.data ? `${options.data.default_outcomes.join(", ")} (default)` : "Loading…";
  return (
    <form className="panel stack" onSubmit={submit} aria-label="Start an evaluation">
      <div className="row eval-form">
        <label>
          Size
          <select value={preset} onChange={(e) => setPreset(e.target.value as "quick" | "full")}>
            <option value="quick">Quick</option>
            <option value="full">Full</option>
          </select>
        </label>
        <label>
          Outcomes
          <select value={outcome} onChange={(e) => setOutcome(e.target.value)}>
            <option value="">{defaults}</option>
            {options.data?.outcomes.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <SeedField seed={seed} setSeed={setSeed} />
        <button type="submit" className="primary" data-testid="start-evaluation" disabled={start.isPending}>
          {start.isPending ? "Starting…" : "Start evaluation"}
        </button>
      </div>
      <p className="muted small">
        {preset === "quick"
          ? quick
            ? `Quick: a seeded ${String(quick.max_train_items)} train and ${String(quick.max_test_items)} test items, and a small learned policy (SFT only) at ${
                Array.isArray((quick.learned as { knobs?: unknown[] } | null)?.knobs)
                  ? (quick.learned as { knobs: unknown[] }).knobs.length
                  : "a few"
              } values of λ; every baseline.`
            : "Quick: a subset of the items and a small learned policy."
          : "Full: every item, and the learned policy at its default sizes (SFT and RL, 34 values of λ); takes minutes."}
      </p>
      <ErrorText error={start.error} />
    </form>
  );
}
