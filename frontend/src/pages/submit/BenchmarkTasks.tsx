// Tasks made of a vendored benchmark's items: a seeded sample of N, each with its gold answer,
// checker and metadata (POST /api/tasks/from-benchmark). Once made: run one, or collect on them.
import { Link } from "react-router";

import type { Options, TasksMade } from "../../api/types";
import { FieldNote } from "../../components/States";

export interface BenchmarkChoice {
  benchmark: string;
  n: string;
  seed: string;
}

export const NO_BENCHMARK: BenchmarkChoice = { benchmark: "", n: "20", seed: "0" };

/** The request's body, or what stops it (shown beside the field). */
export function benchmarkBody(choice: BenchmarkChoice): { body?: object; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  if (!choice.benchmark) errors.benchmark = "Choose a benchmark.";
  if (!/^\d+$/.test(choice.n) || Number(choice.n) < 1) errors.n = "How many: a whole number, at least 1.";
  if (!/^\d+$/.test(choice.seed)) errors.seed = "The seed is a whole number, 0 or more.";
  if (Object.keys(errors).length) return { errors };
  return { body: { benchmark: choice.benchmark, n: Number(choice.n), seed: Number(choice.seed) }, errors };
}

interface Props {
  choice: BenchmarkChoice;
  change: (patch: Partial<BenchmarkChoice>) => void;
  benchmarks: Options["vendored_benchmarks"];
  errors: Record<string, string>;
  made: TasksMade | null;
}

export function BenchmarkTasks({ choice, change, benchmarks, errors, made }: Props) {
  const note = (field: string) => (errors[field] ? `benchmark-${field}-note` : undefined);
  return (
    <>
      <p className="muted small">
        Checker-verified tasks of a seeded sample of a benchmark's items: the same seed gives the same items, and an
        item you have a task of already is not made again.
      </p>
      <div className="row">
        <label className="grow">
          Benchmark
          <select
            value={choice.benchmark}
            onChange={(e) => change({ benchmark: e.target.value })}
            aria-invalid={errors.benchmark ? true : undefined}
            aria-describedby={note("benchmark")}
            data-testid="benchmark-name"
          >
            <option value="">Choose a benchmark</option>
            {benchmarks.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          How many
          <input
            inputMode="numeric"
            value={choice.n}
            onChange={(e) => change({ n: e.target.value.trim() })}
            aria-invalid={errors.n ? true : undefined}
            aria-describedby={note("n")}
            data-testid="benchmark-n"
          />
        </label>
        <label>
          Seed
          <input
            inputMode="numeric"
            value={choice.seed}
            onChange={(e) => change({ seed: e.target.value.trim() })}
            aria-invalid={errors.seed ? true : undefined}
            aria-describedby={note("seed")}
          />
        </label>
      </div>
      {["benchmark", "n", "seed"].map((field) => (
        <FieldNote key={field} id={`benchmark-${field}-note`} message={errors[field]} />
      ))}
      {made && (
        <div className="made" role="status" data-testid="benchmark-made">
          <p>
            {made.created} task(s) made
            {made.existing ? `, ${made.existing} of the sample there already` : ""}: {made.task_ids.length} in all.
          </p>
          <p className="row">
            <Link to={`/collections?tasks=${made.task_ids.join(",")}`}>Collect on them</Link>
            {made.task_ids.length > 0 && <Link to={`/?task=${made.task_ids[0]}`}>Run the first one</Link>}
          </p>
        </div>
      )}
    </>
  );
}
