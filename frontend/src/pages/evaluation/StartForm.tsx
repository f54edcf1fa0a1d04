// Start an evaluation: of routers on recorded items, or of composite tasks (split or solved
// whole); its size (preset), the outcome file to test on, the seed, and for composites the
// interference penalty and whether to add a sensitivity table.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";

import { api, withFirst, type Page } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Evaluation, EvaluationOptions } from "../../api/types";
import { CollectionChoice, SeedField } from "../../components/JobForm";
import { ErrorText } from "../../components/States";

/** The penalties a sensitivity table adds (docs/evaluation.md's run). */
const SENSITIVITY = [0.01, 0.05, 0.1];

export function StartForm({ onStarted }: { onStarted: (id: number) => void }) {
  const client = useQueryClient();
  const options = useQuery({
    queryKey: keys.evaluations.options,
    queryFn: () => api<EvaluationOptions>("/api/evaluations/options"),
  });
  const [kind, setKind] = useState<"items" | "composites">("items");
  const [preset, setPreset] = useState<"quick" | "full">("quick");
  const [outcome, setOutcome] = useState("");
  const [seed, setSeed] = useState(0);
  const [penalty, setPenalty] = useState(0);
  const [sensitivity, setSensitivity] = useState(false);
  const [collections, setCollections] = useState<number[]>([]);
  const start = useMutation({
    mutationFn: () =>
      api<Evaluation>("/api/evaluations", {
        method: "POST",
        body:
          kind === "composites"
            ? {
                kind,
                preset,
                seed,
                outcomes: outcome ? [outcome] : [],
                penalty,
                sensitivity: sensitivity ? SENSITIVITY : [],
              }
            : { preset, seed, outcomes: outcome ? [outcome] : [], collections },
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
  const composites = options.data?.composites as
    { default_outcomes: string[]; presets: Record<string, { train_count: number; test_count: number }> } | undefined;
  const defaultOutcomes = kind === "composites" ? composites?.default_outcomes : options.data?.default_outcomes;
  const alone = kind === "items" && collections.length > 0; // no file chosen: the collections alone
  const defaults = alone
    ? "None: the collections alone"
    : defaultOutcomes
      ? `${defaultOutcomes.join(", ")} (default)`
      : "Loading…";
  return (
    <form className="panel stack" onSubmit={submit} aria-label="Start an evaluation">
      <div className="row eval-form">
        <label>
          Kind
          <select
            value={kind}
            data-testid="evaluation-kind"
            onChange={(e) => setKind(e.target.value as "items" | "composites")}
          >
            <option value="items">Items: routers on recorded items</option>
            <option value="composites">Composites: split or solve whole</option>
          </select>
        </label>
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
        {kind === "composites" && (
          <>
            <label>
              Interference penalty
              <input
                type="number"
                min={0}
                max={1}
                step={0.01}
                value={penalty}
                data-testid="evaluation-penalty"
                onChange={(e) => setPenalty(Number(e.target.value))}
              />
            </label>
            <label className="inline">
              <input type="checkbox" checked={sensitivity} onChange={(e) => setSensitivity(e.target.checked)} />
              &nbsp;Sensitivity table ({SENSITIVITY.join(", ")})
            </label>
          </>
        )}
        <button type="submit" className="primary" data-testid="start-evaluation" disabled={start.isPending}>
          {start.isPending ? "Starting…" : "Start evaluation"}
        </button>
      </div>
      {kind === "items" && (
        <CollectionChoice
          chosen={collections}
          setChosen={setCollections}
          legend="Collections to test on (alone when no outcome file is chosen)"
        />
      )}
      <p className="muted small">
        {kind === "composites"
          ? `Composites of 2 to 6 recorded items (a quarter nested), ${
              composites?.presets[preset]
                ? `${composites.presets[preset].train_count} train and ${composites.presets[preset].test_count} test per seed`
                : "train and test from the items' own split"
            }: every method splits each one, or solves it whole with one pair. Scored from the records, assuming no interference between parts answered in one call, less the penalty per extra part.`
          : preset === "quick"
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
