// The tasks a collection runs: every task the user can see of a benchmark (and a domain), or
// task ids typed or pasted.
import { useQuery } from "@tanstack/react-query";

import { api, query, type Page } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Options, Task } from "../../api/types";
import { FieldNote } from "../../components/States";
import { parseTaskIds } from "../../lib/collections";

export interface TaskChoice {
  mode: "benchmark" | "ids";
  benchmark: string;
  domain: string;
  /** The ids as typed. */
  text: string;
}

export const NO_TASKS: TaskChoice = { mode: "benchmark", benchmark: "", domain: "", text: "" };

interface Props {
  choice: TaskChoice;
  onChange: (patch: Partial<TaskChoice>) => void;
  options: Options | undefined;
  error: string | undefined;
  errorId: string;
}

/** How many tasks the choice holds (undefined while a count loads). */
export function useTaskCount(choice: TaskChoice): number | undefined {
  const filters = { benchmark: choice.benchmark, domain: choice.domain };
  const counted = useQuery({
    queryKey: keys.taskCount(filters),
    queryFn: ({ signal }) => api<Page<Task>>(`/api/tasks${query({ ...filters, limit: 1 })}`, { signal }),
    enabled: choice.mode === "benchmark" && choice.benchmark !== "",
  });
  if (choice.mode === "ids") return parseTaskIds(choice.text).ids.length;
  return choice.benchmark ? counted.data?.count : 0;
}

export function TaskPicker({ choice, onChange, options, error, errorId }: Props) {
  const count = useTaskCount(choice);
  const bad = choice.mode === "ids" ? parseTaskIds(choice.text).bad : [];
  const described = [error ? errorId : "", bad.length ? `${errorId}-bad` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <fieldset className="choices" data-testid="collection-tasks">
      <legend>
        Tasks{" "}
        <span className="muted small" aria-live="polite">
          ({count === undefined ? "counting…" : `${count} chosen`})
        </span>
      </legend>
      <div className="row">
        <label className="inline">
          <input
            type="radio"
            name="task-mode"
            checked={choice.mode === "benchmark"}
            onChange={() => onChange({ mode: "benchmark" })}
          />{" "}
          By benchmark
        </label>
        <label className="inline">
          <input
            type="radio"
            name="task-mode"
            checked={choice.mode === "ids"}
            onChange={() => onChange({ mode: "ids" })}
          />{" "}
          By task ids
        </label>
      </div>
      {choice.mode === "benchmark" ? (
        <div className="row">
          <label>
            Benchmark
            <select
              value={choice.benchmark}
              onChange={(e) => onChange({ benchmark: e.target.value })}
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? errorId : undefined}
            >
              <option value="">Choose a benchmark</option>
              {options?.benchmarks.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Domain
            <select value={choice.domain} onChange={(e) => onChange({ domain: e.target.value })}>
              <option value="">Any</option>
              {options?.domains.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          {options?.benchmarks.length === 0 && (
            <p className="muted small">No task of yours has a benchmark yet; paste task ids instead.</p>
          )}
        </div>
      ) : (
        <label>
          Task ids
          <textarea
            className="task-ids"
            value={choice.text}
            placeholder="e.g. 12, 13, 14 (commas, spaces or one per line)"
            onChange={(e) => onChange({ text: e.target.value })}
            aria-invalid={error || bad.length ? true : undefined}
            aria-describedby={described}
          />
        </label>
      )}
      {bad.length > 0 && (
        <p id={`${errorId}-bad`} className="field-note">
          Not task ids: {bad.slice(0, 5).join(", ")}
          {bad.length > 5 ? ` and ${bad.length - 5} more` : ""}.
        </p>
      )}
      <p className="muted small">
        Each task needs a gold answer, a checker and a domain; a replay endpoint answers only tasks of recorded items.
      </p>
      <FieldNote id={errorId} message={error} />
    </fieldset>
  );
}
