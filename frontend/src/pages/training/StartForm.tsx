// Start a training job: its kind, size, seed and outcome files; a policy's guide.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";

import { api, fetchEvery, withFirst, type Page } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Checkpoint, EvaluationOptions, TrainingJob } from "../../api/types";
import { CollectionChoice, SeedField } from "../../components/JobForm";
import { ErrorText, Loading } from "../../components/States";
import { jobConfig, QUICK_OUTCOMES, type Kind, type Size } from "./config";

export function StartForm({ onStarted }: { onStarted: (id: number) => void }) {
  const client = useQueryClient();
  const options = useQuery({
    queryKey: keys.evaluations.options,
    queryFn: () => api<EvaluationOptions>("/api/evaluations/options"),
  });
  const [kind, setKind] = useState<Kind>("policy");
  const [size, setSize] = useState<Size>("quick");
  const [seed, setSeed] = useState(0);
  const [outcomes, setOutcomes] = useState<string[]>([]);
  const [unseen, setUnseen] = useState(false);
  const [guide, setGuide] = useState<number | null>(null);
  const [collections, setCollections] = useState<number[]>([]);
  const checkpoints = useQuery({
    queryKey: keys.training.checkpoints,
    queryFn: ({ signal }) => fetchEvery<Checkpoint>("/api/checkpoints", {}, signal),
  });
  const rewardModels = (checkpoints.data?.items ?? []).filter((c) => c.kind === "reward_model");
  const start = useMutation({
    mutationFn: () =>
      api<TrainingJob>("/api/training/jobs", {
        method: "POST",
        body: { kind, config: jobConfig(kind, size, seed, outcomes, unseen, guide, collections) },
      }),
    onSuccess: (job) => {
      // The list shows the new job at once (and so keeps looking while it runs).
      client.setQueryData<Page<TrainingJob>>(keys.training.jobs, (page) => withFirst(page, job));
      void client.invalidateQueries({ queryKey: keys.training.jobs });
      onStarted(job.id);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate();
  };
  const toggle = (name: string) =>
    setOutcomes((now) => (now.includes(name) ? now.filter((n) => n !== name) : [...now, name]));
  const fullDefault = kind === "policy" ? "every shipped file" : "routerbench and llmrouter";
  return (
    <form className="panel stack" onSubmit={submit} aria-label="Start a training job">
      <div className="row train-form">
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
            <option value="policy">Policy</option>
            <option value="reward_model">Reward model</option>
          </select>
        </label>
        <label>
          Size
          <select value={size} onChange={(e) => setSize(e.target.value as Size)}>
            <option value="quick">Quick</option>
            <option value="full">Full</option>
          </select>
        </label>
        <SeedField seed={seed} setSeed={setSeed} />
        {kind === "policy" && (
          <label
            className="inline"
            title="For pools of models it never trained on, each calibrated on its own probe outcomes"
          >
            <input type="checkbox" checked={unseen} onChange={(e) => setUnseen(e.target.checked)} /> For unseen pools
          </label>
        )}
        {kind === "policy" && (
          <label title="RL also plays the cells the outcome files did not record, scored by this reward model">
            Guide
            <select
              value={guide ?? ""}
              onChange={(e) => setGuide(e.target.value === "" ? null : Number(e.target.value))}
              data-testid="training-guide"
            >
              <option value="">None</option>
              {rewardModels.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <button type="submit" className="primary" data-testid="start-training" disabled={start.isPending}>
          {start.isPending ? "Starting…" : "Start training"}
        </button>
      </div>
      <fieldset className="outcomes">
        <legend>
          Outcome files{" "}
          <span className="muted small">
            (none ticked: {size === "quick" ? QUICK_OUTCOMES.join(", ") : fullDefault})
          </span>
        </legend>
        {options.isPending && <Loading what="Loading the outcome files" />}
        {options.isError && <ErrorText error={options.error} />}
        {options.data?.outcomes.map((name) => (
          <label key={name} className="inline">
            <input type="checkbox" checked={outcomes.includes(name)} onChange={() => toggle(name)} /> {name}
          </label>
        ))}
      </fieldset>
      <CollectionChoice
        chosen={collections}
        setChosen={setCollections}
        legend="Collections: your pool's recorded outcomes, trained on beside the files"
      />
      <p className="muted small">
        {size === "quick"
          ? kind === "policy"
            ? "Quick: 8 epochs of each SFT stage and 20 RL updates, on Reflexion's 601 items unless you tick files."
            : "Quick: 40 epochs in batches of 16 over Reflexion's pairs unless you tick files."
          : "Full: the trainer's default sizes (docs/learning.md); files whose prompts are not embedded yet take minutes more."}
      </p>
      <ErrorText error={start.error} />
    </form>
  );
}
