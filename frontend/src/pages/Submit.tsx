import { useMutation, useQuery } from "@tanstack/react-query";
import { useDeferredValue, useId, useState, type FormEvent, type KeyboardEvent } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";

import { api, query, type Page } from "../api/client";
import type { Options, Pool, RecordedItem, Run, Task } from "../api/types";
import { ErrorText, Loading } from "../components/States";
import "./Submit.css";

type Mode = "text" | "items";
type Preset = "cheap" | "balanced" | "best" | "custom";

const ITEMS_PAGE = 8;
const MAX_ITEMS = 32;

interface Budget {
  bestOf: number;
  maxCost: string;
  maxNodes: string;
  deadline: string;
}

/** λ from a slider position: 0 at the left end, then log-spaced up to 2. */
export function lambdaAt(position: number): number {
  if (position <= 0) return 0;
  return Number((0.001 * Math.pow(2000, position / 100)).toPrecision(2));
}

function numberOrNull(text: string): number | null {
  return text.trim() === "" ? null : Number(text);
}

/** `?task=ID` (and `&pool=ID`): run an existing task again, as the run page's "Run again" links. */
function againParams(params: URLSearchParams): { task: number | null; pool: number | null } {
  const id = (name: string) => (/^\d+$/.test(params.get(name) ?? "") ? Number(params.get(name)) : null);
  return { task: id("task"), pool: id("pool") };
}

export default function SubmitPage() {
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const again = againParams(params);
  const options = useQuery({ queryKey: ["options"], queryFn: () => api<Options>("/api/options") });
  const pools = useQuery({ queryKey: ["pools", "all"], queryFn: () => api<Page<Pool>>("/api/pools?limit=200") });
  const againTask = useQuery({
    queryKey: ["task", again.task],
    queryFn: () => api<Task>(`/api/tasks/${again.task}`),
    enabled: again.task !== null,
  });

  const [mode, setMode] = useState<Mode>("text");
  const [text, setText] = useState("");
  const [gold, setGold] = useState("");
  const [checker, setChecker] = useState("");
  const [decomposable, setDecomposable] = useState(false);
  const [items, setItems] = useState<RecordedItem[]>([]);
  const [poolId, setPoolId] = useState<number | null>(null);
  const [policy, setPolicy] = useState<string>("");
  const [preset, setPreset] = useState<Preset>("balanced");
  const [slider, setSlider] = useState(40);
  const [budget, setBudget] = useState<Budget>({ bestOf: 1, maxCost: "", maxNodes: "", deadline: "" });
  // A task already created for this exact input is reused when only the run failed.
  const [made, setMade] = useState<{ key: string; task: Task } | null>(null);

  const pool = poolId ?? again.pool ?? options.data?.default_pool_id ?? pools.data?.items[0]?.id ?? null;
  const chosenPolicy = policy || options.data?.default_policy || "default";

  const submit = useMutation({
    mutationFn: async () => {
      const key = JSON.stringify({ mode, text, gold, checker, decomposable, items: items.map((i) => [i.source, i.item_id]) });
      let task = againTask.data ?? (made?.key === key ? made.task : null);
      if (!task) {
        task =
          mode === "items"
            ? await api<Task>("/api/tasks/composite", {
                method: "POST",
                body: { items: items.map((item) => ({ source: item.source, item_id: item.item_id })), text: text.trim() },
              })
            : await api<Task>("/api/tasks", { method: "POST", body: { text, gold_answer: gold, checker, decomposable } });
        setMade({ key, task });
      }
      if (pool === null) throw new Error("Choose a pool first: there is none yet. An admin creates pools.");
      const run = await api<Run>("/api/runs", {
        method: "POST",
        body: {
          task_id: task.id,
          pool_id: pool,
          policy: chosenPolicy,
          ...(preset === "custom" ? { cost_preference: lambdaAt(slider) } : { preset }),
          best_of: budget.bestOf,
          max_cost_usd: numberOrNull(budget.maxCost),
          max_nodes: numberOrNull(budget.maxNodes),
          deadline_s: numberOrNull(budget.deadline),
        },
      });
      return run;
    },
    onSuccess: (run) => navigate(`/runs/${run.id}`),
  });

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    if (!submit.isPending) submit.mutate();
  }

  function ctrlEnter(event: KeyboardEvent) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) onSubmit(event);
  }

  if (options.isPending || pools.isPending || (again.task !== null && againTask.isPending))
    return <Loading what="Loading pools and policies" />;
  if (options.isError || pools.isError) return <ErrorText error={options.error ?? pools.error} />;

  const ready = againTask.data ? true : mode === "text" ? text.trim().length > 0 : items.length > 0;
  const settings = (
    <section className="panel stack" aria-label="Run settings">
      <label>
        Pool
        <select value={pool ?? ""} onChange={(e) => setPoolId(Number(e.target.value))} data-testid="pool">
          {pools.data.items.length === 0 && <option value="">no pools yet</option>}
          {pools.data.items.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Policy
        <select value={chosenPolicy} onChange={(e) => setPolicy(e.target.value)}>
          {options.data.policies.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name}
              {p.needs_checkpoint ? " (trained checkpoint)" : ""}
            </option>
          ))}
        </select>
      </label>
      <fieldset className="cost">
        <legend>Cost preference</legend>
        <div className="row" role="radiogroup" aria-label="Cost preference">
          {(["cheap", "balanced", "best", "custom"] as Preset[]).map((name) => (
            <button
              key={name}
              type="button"
              role="radio"
              aria-checked={preset === name}
              className={preset === name ? "chip on" : "chip"}
              onClick={() => setPreset(name)}
            >
              {name}
              {name !== "custom" && <span className="muted small"> λ={options.data.presets[name]}</span>}
            </button>
          ))}
        </div>
        {preset === "custom" && (
          <label>
            λ = {lambdaAt(slider)} <span className="muted small">(0: accuracy only; higher: cheaper)</span>
            <input type="range" min={0} max={100} value={slider} onChange={(e) => setSlider(Number(e.target.value))} />
          </label>
        )}
      </fieldset>
      <div className="row">
        <label>
          Best of N
          <input
            type="number"
            min={1}
            max={16}
            value={budget.bestOf}
            onChange={(e) => setBudget({ ...budget, bestOf: Number(e.target.value) || 1 })}
          />
        </label>
        <label>
          Budget ($)
          <input
            type="number"
            min={0}
            step="any"
            placeholder="none"
            value={budget.maxCost}
            onChange={(e) => setBudget({ ...budget, maxCost: e.target.value })}
          />
        </label>
      </div>
      <details>
        <summary>More limits</summary>
        <div className="row">
          <label>
            Max nodes
            <input type="number" min={1} value={budget.maxNodes} onChange={(e) => setBudget({ ...budget, maxNodes: e.target.value })} />
          </label>
          <label>
            Deadline (s)
            <input type="number" min={1} value={budget.deadline} onChange={(e) => setBudget({ ...budget, deadline: e.target.value })} />
          </label>
        </div>
      </details>
      <ErrorText error={submit.error} />
      <button type="submit" className="primary" disabled={!ready || submit.isPending} data-testid="submit-run">
        {submit.isPending ? "Starting…" : "Run"} <span className="hint">Ctrl+Enter</span>
      </button>
    </section>
  );

  return (
    <form className="submit-page" onSubmit={onSubmit} onKeyDown={ctrlEnter}>
      <h1>{again.task === null ? "Submit a task" : `Run task #${again.task} again`}</h1>
      {again.task !== null ? (
        <div className="submit-grid">
          <section className="panel stack" aria-label="Task">
            {againTask.isError ? (
              <ErrorText error={againTask.error} />
            ) : (
              <p className="submit-again" data-testid="again-text">
                {againTask.data?.text}
              </p>
            )}
            <p className="muted small">
              Another run of the same task, with the settings you choose: two runs of one task can be compared side by
              side and paired for labeling. <Link to="/">Write a new task instead</Link>
            </p>
          </section>
          {settings}
        </div>
      ) : (
        <>
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
          </div>

          <div className="submit-grid">
            <section className="panel stack" aria-label="Task">
              {mode === "text" ? (
                <>
                  <label>
                    Task
                    <textarea
                      value={text}
                      onChange={(e) => setText(e.target.value)}
                      placeholder="What is 6*7? — or anything the pool's models should solve"
                      autoFocus
                    />
                  </label>
                  <div className="row">
                    <label className="grow">
                      Gold answer <span className="muted small">(optional, to verify the answer)</span>
                      <input value={gold} onChange={(e) => setGold(e.target.value)} />
                    </label>
                    <label>
                      Checker
                      <select value={checker} onChange={(e) => setChecker(e.target.value)}>
                        <option value="">none</option>
                        {options.data.checkers.map((name) => (
                          <option key={name} value={name}>
                            {name}
                          </option>
                        ))}
                      </select>
                    </label>
                  </div>
                  <label className="inline">
                    <input type="checkbox" checked={decomposable} onChange={(e) => setDecomposable(e.target.checked)} /> Let
                    the policy split it into subtasks
                  </label>
                </>
              ) : (
                <ItemPicker sources={options.data.sources} items={items} setItems={setItems} title={text} setTitle={setText} />
              )}
            </section>

            {settings}
          </div>
        </>
      )}
    </form>
  );
}

function ItemPicker(props: {
  sources: string[];
  items: RecordedItem[];
  setItems: (items: RecordedItem[]) => void;
  title: string;
  setTitle: (text: string) => void;
}) {
  const { sources, items, setItems } = props;
  const [source, setSource] = useState(sources.includes("routerbench") ? "routerbench" : (sources[0] ?? ""));
  const [search, setSearch] = useState("");
  const [offset, setOffset] = useState(0);
  const searchId = useId();
  const deferred = useDeferredValue(search.trim());
  const found = useQuery({
    queryKey: ["recorded-items", source, deferred, offset],
    queryFn: ({ signal }) =>
      api<Page<RecordedItem>>(`/api/recorded-items${query({ source, search: deferred, limit: ITEMS_PAGE, offset })}`, { signal }),
    placeholderData: (previous) => previous,
  });
  const chosen = new Set(items.map((item) => `${item.source}/${item.item_id}`));

  if (sources.length === 0)
    return (
      <p className="muted">
        No recorded outcomes are imported yet, so there is nothing to compose. <code>make up</code> imports the shipped ones.
      </p>
    );
  return (
    <div className="stack">
      <p className="muted small">
        A composite task: one subtask per recorded item, answered on the replay pool from real recorded model outputs.
      </p>
      <div className="row">
        <label>
          Source
          <select
            value={source}
            onChange={(e) => {
              setSource(e.target.value);
              setOffset(0);
            }}
          >
            {sources.map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        <label className="grow" htmlFor={searchId}>
          Search the prompts
          <input
            id={searchId}
            type="search"
            value={search}
            data-testid="item-search"
            onChange={(e) => {
              setSearch(e.target.value);
              setOffset(0);
            }}
          />
        </label>
      </div>
      {found.isError && <ErrorText error={found.error} />}
      {found.isPending && <Loading what="Looking" />}
      {found.data && found.data.count === 0 && <p className="muted">No recorded item matches.</p>}
      {found.data && found.data.count > 0 && (
        <>
          <ul className="items" aria-busy={found.isFetching}>
            {found.data.items.map((item) => {
              const key = `${item.source}/${item.item_id}`;
              return (
                <li key={key}>
                  <div className="item-text">
                    <span className="badge">{item.benchmark}</span> <span className="mono small">{item.item_id}</span>
                    <div className="small">{item.question.slice(0, 160)}</div>
                  </div>
                  <button
                    type="button"
                    data-testid="item-add"
                    disabled={chosen.has(key) || items.length >= MAX_ITEMS}
                    onClick={() => setItems([...items, item])}
                  >
                    {chosen.has(key) ? "Added" : "Add"}
                  </button>
                </li>
              );
            })}
          </ul>
          <div className="pager">
            <span className="muted small">
              {offset + 1}–{Math.min(offset + ITEMS_PAGE, found.data.count)} of {found.data.count}
            </span>
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - ITEMS_PAGE))}>
              Previous
            </button>
            <button
              type="button"
              disabled={offset + ITEMS_PAGE >= found.data.count}
              onClick={() => setOffset(offset + ITEMS_PAGE)}
            >
              Next
            </button>
          </div>
        </>
      )}
      <h3>
        Chosen ({items.length}/{MAX_ITEMS})
      </h3>
      {items.length === 0 ? (
        <p className="muted small">Add at least one item.</p>
      ) : (
        <ul className="chosen">
          {items.map((item) => (
            <li key={`${item.source}/${item.item_id}`}>
              <span className="mono small">{item.item_id}</span>
              <button
                type="button"
                className="link"
                aria-label={`Remove ${item.item_id}`}
                onClick={() => setItems(items.filter((other) => other !== item))}
              >
                remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <label>
        Title <span className="muted small">(optional; by default the items' questions, numbered)</span>
        <input value={props.title} onChange={(e) => props.setTitle(e.target.value)} />
      </label>
    </div>
  );
}
