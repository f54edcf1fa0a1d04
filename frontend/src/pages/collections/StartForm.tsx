// Start a collection: a name, the pool, its pairs to call, the tasks, the budget in dollars,
// the calls in flight per endpoint, and whether its outcomes calibrate the pool once it
// succeeds. A refusal is shown beside the field it names.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { useSearchParams } from "react-router";

import { api, fetchAll, fieldErrors } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Collection, CollectionIn, Options, Pool, Task } from "../../api/types";
import { ErrorText, FieldNote } from "../../components/States";
import { parseTaskIds } from "../../lib/collections";
import { PairPicker, usePoolPairs } from "./PairPicker";
import { NO_TASKS, TaskPicker, useTaskCount, type TaskChoice } from "./TaskPicker";

interface Draft {
  name: string;
  /** null: the default pool. */
  poolId: number | null;
  /** The pairs' keys ticked; null: all of the pool's. */
  pairs: string[] | null;
  tasks: TaskChoice;
  budget: string;
  concurrency: string;
  calibrates: boolean;
}

const INITIAL: Draft = {
  name: "",
  poolId: null,
  pairs: null,
  tasks: NO_TASKS,
  budget: "1",
  concurrency: "4",
  calibrates: false,
};

/** The request's fields this form shows a refusal beside; any other refusal goes below it. */
const FIELDS = ["name", "pool_id", "pairs", "task_ids", "budget_usd", "max_concurrency", "calibrates"];

async function taskIds(choice: TaskChoice, signal?: AbortSignal): Promise<number[]> {
  if (choice.mode === "ids") return parseTaskIds(choice.text).ids;
  if (!choice.benchmark) return [];
  const tasks = await fetchAll<Task>("/api/tasks", { benchmark: choice.benchmark, domain: choice.domain }, signal);
  return tasks.map((task) => task.id);
}

export function StartForm({ onStarted }: { onStarted: (collection: Collection) => void }) {
  const id = useId();
  const options = useQuery({ queryKey: keys.options, queryFn: () => api<Options>("/api/options") });
  const pools = useQuery({
    queryKey: keys.pools.list,
    queryFn: ({ signal }) => fetchAll<Pool>("/api/pools", {}, signal),
  });
  const [params] = useSearchParams();
  // `?tasks=1,2,3`: the Submit page's "Collect on them" link, for the tasks it just made
  const [draft, setDraft] = useState<Draft>(() => {
    const given = params.get("tasks");
    return given ? { ...INITIAL, tasks: { ...NO_TASKS, mode: "ids", text: given } } : INITIAL;
  });
  const poolId = draft.poolId ?? options.data?.default_pool_id ?? pools.data?.[0]?.id ?? null;
  const poolPairs = usePoolPairs(poolId);
  const chosen = (poolPairs.pairs ?? []).filter((pair) => draft.pairs === null || draft.pairs.includes(pair.key));
  const taskCount = useTaskCount(draft.tasks);
  const start = useMutation({
    mutationFn: async () => {
      const body: CollectionIn = {
        pool_id: poolId ?? 0,
        task_ids: await taskIds(draft.tasks),
        pairs: chosen.map(({ endpoint_id, primitive }) => ({ endpoint_id, primitive })),
        budget_usd: Number(draft.budget),
        max_concurrency: Number(draft.concurrency),
        name: draft.name.trim(),
        calibrates: draft.calibrates,
      };
      return api<Collection>("/api/collections", { method: "POST", body });
    },
    onSuccess: onStarted,
  });
  const change = (patch: Partial<Draft>) => {
    setDraft((now) => ({ ...now, ...patch }));
    if (start.isError) start.reset();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate();
  };
  const errors = fieldErrors(start.error);
  const elsewhere = Object.keys(errors).every((field) => !FIELDS.includes(field));
  const note = (field: string) => `${id}-${field}`;
  const invalid = (field: string) =>
    errors[field] ? { "aria-invalid": true, "aria-describedby": note(field) } : { "aria-invalid": undefined };
  const badIds = draft.tasks.mode === "ids" && parseTaskIds(draft.tasks.text).bad.length > 0;
  const cells = taskCount === undefined ? undefined : taskCount * chosen.length;

  return (
    <form className="panel stack collection-form" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Start a collection</h2>
      <div className="row collection-fields">
        <div className="field">
          <label>
            Name
            <input
              value={draft.name}
              maxLength={100}
              placeholder="e.g. gsm8k probe"
              onChange={(e) => change({ name: e.target.value })}
              {...invalid("name")}
            />
          </label>
          <FieldNote id={note("name")} message={errors.name} />
        </div>
        <div className="field">
          <label>
            Pool
            <select
              value={poolId ?? ""}
              onChange={(e) => change({ poolId: Number(e.target.value), pairs: null })}
              {...invalid("pool_id")}
            >
              {pools.data?.length === 0 && <option value="">no pools yet</option>}
              {pools.data?.map((pool) => (
                <option key={pool.id} value={pool.id}>
                  {pool.name}
                </option>
              ))}
            </select>
          </label>
          <FieldNote id={note("pool_id")} message={errors.pool_id} />
        </div>
        <div className="field">
          <label>
            Budget ($)
            <input
              type="number"
              min={0}
              step="any"
              value={draft.budget}
              onChange={(e) => change({ budget: e.target.value })}
              {...invalid("budget_usd")}
            />
          </label>
          <FieldNote id={note("budget_usd")} message={errors.budget_usd} />
        </div>
        <div className="field">
          <label>
            Calls in flight per endpoint
            <input
              type="number"
              min={1}
              max={64}
              step={1}
              value={draft.concurrency}
              onChange={(e) => change({ concurrency: e.target.value })}
              {...invalid("max_concurrency")}
            />
          </label>
          <FieldNote id={note("max_concurrency")} message={errors.max_concurrency} />
        </div>
      </div>
      {pools.isError && <ErrorText error={pools.error} />}
      {poolPairs.error && <ErrorText error={poolPairs.error} />}
      <div className="grid2">
        <PairPicker
          pairs={poolPairs.pairs}
          pending={poolId !== null && poolPairs.pending}
          picked={draft.pairs}
          onPick={(pairs) => change({ pairs })}
          error={errors.pairs}
          errorId={note("pairs")}
        />
        <TaskPicker
          choice={draft.tasks}
          onChange={(patch) => change({ tasks: { ...draft.tasks, ...patch } })}
          options={options.data}
          error={errors.task_ids}
          errorId={note("task_ids")}
        />
      </div>
      <div className="field">
        <label className="inline">
          <input
            type="checkbox"
            checked={draft.calibrates}
            onChange={(e) => change({ calibrates: e.target.checked })}
            {...invalid("calibrates")}
          />
          &nbsp;Calibrate the pool
          <span className="muted small">&nbsp;(once it succeeds, its outcomes become the pool&apos;s calibration)</span>
        </label>
        <FieldNote id={note("calibrates")} message={errors.calibrates} />
      </div>
      <div className="row">
        <button
          type="submit"
          className="primary"
          data-testid="start-collection"
          disabled={start.isPending || poolId === null || badIds}
        >
          {start.isPending ? "Starting…" : "Start collection"}
        </button>
        <span className="muted small" data-testid="collection-cells">
          {cells === undefined
            ? "Counting the tasks…"
            : `${taskCount} task(s) × ${chosen.length} pair(s) = ${cells} cell(s), one call each`}
        </span>
      </div>
      {elsewhere && <ErrorText error={start.error} />}
      <p className="muted small" role="status">
        {start.data ? `Collection #${start.data.id} is queued.` : ""}
      </p>
    </form>
  );
}
