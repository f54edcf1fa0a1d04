// Submit a task: written text (gold answer, checker) or a composite of recorded items, and
// the run's settings; Ctrl+Enter runs it. `?task=ID&pool=ID` runs an existing task again.
// "From a benchmark" makes checker-verified tasks of a vendored benchmark instead.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState, type FormEvent, type RefObject } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";

import { api, fetchAll } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Options, Pool, RecordedItem, Run, Task, TasksMade } from "../api/types";
import { Scrollable } from "../components/Scrollable";
import { ErrorText, Loading } from "../components/States";
import { benchmarkBody, BenchmarkTasks, NO_BENCHMARK, type BenchmarkChoice } from "./submit/BenchmarkTasks";
import { ItemPicker } from "./submit/ItemPicker";
import { DEFAULT_SETTINGS, runBody, RunSettings, type Settings } from "./submit/RunSettings";
import { NO_TEXT, TextTask, type Written } from "./submit/TextTask";
import "./Submit.css";

type Mode = "text" | "items" | "benchmark";

/** `?task=ID` (and `&pool=ID`): run an existing task again, as the run page's "Run again" links. */
function againParams(params: URLSearchParams): { task: number | null; pool: number | null } {
  const id = (name: string) => (/^\d+$/.test(params.get(name) ?? "") ? Number(params.get(name)) : null);
  return { task: id("task"), pool: id("pool") };
}

/** Ctrl+Enter (Cmd+Enter) anywhere in `form` submits it. */
function useCtrlEnter(form: RefObject<HTMLFormElement | null>) {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
      if (!form.current || !(event.target instanceof Node) || !form.current.contains(event.target)) return;
      event.preventDefault();
      form.current.requestSubmit();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [form]);
}

export default function SubmitPage() {
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const again = againParams(params);
  const options = useQuery({ queryKey: keys.options, queryFn: () => api<Options>("/api/options") });
  const pools = useQuery({
    queryKey: keys.pools.list,
    queryFn: ({ signal }) => fetchAll<Pool>("/api/pools", {}, signal),
  });
  const againTask = useQuery({
    queryKey: keys.task(again.task ?? 0),
    queryFn: () => api<Task>(`/api/tasks/${again.task}`),
    enabled: again.task !== null,
  });

  const [mode, setMode] = useState<Mode>("text");
  const [written, setWritten] = useState<Written>(NO_TEXT);
  const [items, setItems] = useState<RecordedItem[]>([]);
  const [settings, setSettings] = useState<Settings>(DEFAULT_SETTINGS);
  const [choice, setChoice] = useState<BenchmarkChoice>(NO_BENCHMARK);
  const [choiceErrors, setChoiceErrors] = useState<Record<string, string>>({});
  // A task already created for this exact input is reused when only the run failed.
  const [made, setMade] = useState<{ key: string; task: Task } | null>(null);
  const form = useRef<HTMLFormElement>(null);
  useCtrlEnter(form);

  const pool = settings.poolId ?? again.pool ?? options.data?.default_pool_id ?? pools.data?.[0]?.id ?? null;
  const policy = settings.policy || options.data?.default_policy || "default";

  const makeTask = async (): Promise<Task> => {
    const key = JSON.stringify({ mode, written, items: items.map((i) => [i.source, i.item_id]) });
    const known = againTask.data ?? (made?.key === key ? made.task : null);
    if (known) return known;
    const task =
      mode === "items"
        ? await api<Task>("/api/tasks/composite", {
            method: "POST",
            body: { items: items.map(({ source, item_id }) => ({ source, item_id })), text: written.text.trim() },
          })
        : await api<Task>("/api/tasks", {
            method: "POST",
            body: {
              text: written.text,
              gold_answer: written.gold,
              checker: written.checker,
              decomposable: written.decomposable,
            },
          });
    setMade({ key, task });
    return task;
  };
  const submit = useMutation({
    mutationFn: async () => {
      const task = await makeTask();
      if (pool === null) throw new Error("Choose a pool first: there is none yet. An admin creates pools.");
      return api<Run>("/api/runs", {
        method: "POST",
        body: { task_id: task.id, pool_id: pool, ...runBody(settings, policy) },
      });
    },
    onSuccess: (run) => navigate(`/runs/${run.id}`),
  });

  const makeTasks = useMutation({
    mutationFn: (body: object) => api<TasksMade>("/api/tasks/from-benchmark", { method: "POST", body }),
  });

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    if (mode === "benchmark") {
      const { body, errors } = benchmarkBody(choice);
      setChoiceErrors(errors);
      if (body && !makeTasks.isPending) makeTasks.mutate(body);
    } else if (!submit.isPending) submit.mutate();
  };

  if (options.isPending || pools.isPending || (again.task !== null && againTask.isPending))
    return <Loading what="Loading pools and policies" />;
  if (options.isError || pools.isError) return <ErrorText error={options.error ?? pools.error} />;

  const ready = againTask.data ? true : mode === "text" ? written.text.trim().length > 0 : items.length > 0;
  const change = (patch: Partial<Settings>) => setSettings((now) => ({ ...now, ...patch }));
  const runSettings = (
    <RunSettings
      settings={settings}
      change={change}
      pools={pools.data}
      pool={pool}
      policy={policy}
      options={options.data}
    >
      <ErrorText error={submit.error} />
      <button type="submit" className="primary" disabled={!ready || submit.isPending} data-testid="submit-run">
        {submit.isPending ? "Starting…" : "Run"} <span className="hint">Ctrl+Enter</span>
      </button>
    </RunSettings>
  );

  return (
    <form className="submit-page" onSubmit={onSubmit} ref={form}>
      <h1>{again.task === null ? "Submit a task" : `Run task #${again.task} again`}</h1>
      {again.task !== null ? (
        <div className="submit-grid">
          <section className="panel stack" aria-label="Task">
            {againTask.isError ? (
              <ErrorText error={againTask.error} />
            ) : (
              <Scrollable as="p" className="submit-again" data-testid="again-text" label="The task">
                {againTask.data?.text}
              </Scrollable>
            )}
            <p className="muted small">
              Another run of the same task, with the settings you choose: two runs of one task can be compared side by
              side and paired for labeling. <Link to="/">Write a new task instead</Link>
            </p>
          </section>
          {runSettings}
        </div>
      ) : (
        <>
          <ModeTabs mode={mode} setMode={setMode} />
          <div className="submit-grid">
            <section className="panel stack" aria-label="Task">
              {mode === "benchmark" ? (
                <BenchmarkTasks
                  choice={choice}
                  change={(patch) => {
                    setChoice((now) => ({ ...now, ...patch }));
                    makeTasks.reset();
                  }}
                  benchmarks={options.data.vendored_benchmarks}
                  errors={choiceErrors}
                  made={makeTasks.data ?? null}
                />
              ) : mode === "text" ? (
                <TextTask
                  task={written}
                  change={(patch) => setWritten((now) => ({ ...now, ...patch }))}
                  checkers={options.data.checkers}
                />
              ) : (
                <ItemPicker
                  sources={options.data.sources}
                  items={items}
                  setItems={setItems}
                  title={written.text}
                  setTitle={(text) => setWritten((now) => ({ ...now, text }))}
                />
              )}
            </section>
            {mode === "benchmark" ? (
              <section className="panel stack" aria-label="Make the tasks">
                <p className="muted small">
                  A run needs no benchmark: make the tasks here, then run one or collect the pool's outcomes on all of
                  them (Collections).
                </p>
                <ErrorText error={makeTasks.error} />
                <button type="submit" className="primary" disabled={makeTasks.isPending} data-testid="make-tasks">
                  {makeTasks.isPending ? "Making…" : "Make tasks"} <span className="hint">Ctrl+Enter</span>
                </button>
              </section>
            ) : (
              runSettings
            )}
          </div>
        </>
      )}
    </form>
  );
}

function ModeTabs({ mode, setMode }: { mode: Mode; setMode: (mode: Mode) => void }) {
  return (
    <div className="tabs" role="tablist" aria-label="Kind of task">
      <button type="button" role="tab" aria-selected={mode === "text"} onClick={() => setMode("text")}>
        Write a task
      </button>
      <button
        type="button"
        role="tab"
        aria-selected={mode === "items"}
        data-testid="mode-items"
        onClick={() => setMode("items")}
      >
        Compose recorded items
      </button>
      <button
        type="button"
        role="tab"
        aria-selected={mode === "benchmark"}
        data-testid="mode-benchmark"
        onClick={() => setMode("benchmark")}
      >
        From a benchmark
      </button>
    </div>
  );
}
