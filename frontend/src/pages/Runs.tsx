// Runs: a filtered, paged table (filters live in the URL), and two runs picked to compare.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useId, useRef, useState, type KeyboardEvent, type MouseEvent } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";

import { api, query, type Page } from "../api/client";
import type { Options, Run, Task } from "../api/types";
import { atLeast, useMe } from "../auth";
import { Empty, ErrorText, Loading } from "../components/States";
import { seconds, tokens, usd, when } from "../lib/format";
import "./Runs.css";

export const RUNS_PAGE = 25;
const STATUSES = ["pending", "running", "succeeded", "failed", "cancelled"] as const;
/** The URL's filter keys, as the API names them. */
const FILTERS = ["status", "policy", "benchmark", "owner_id", "search"] as const;
type Filter = (typeof FILTERS)[number];

/** A text filter that follows the URL and writes back to it a moment after typing stops. */
function useDebouncedParam(value: string, write: (next: string) => void, delay = 350) {
  const [text, setText] = useState(value);
  const [typed, setTyped] = useState(false);
  const writer = useRef(write);
  useEffect(() => {
    writer.current = write;
  });
  // The URL changed from elsewhere (back, reset): show its value.
  useEffect(() => {
    setText(value);
    setTyped(false);
  }, [value]);
  useEffect(() => {
    if (!typed || text === value) return;
    const timer = window.setTimeout(() => writer.current(text), delay);
    return () => window.clearTimeout(timer);
  }, [typed, text, value, delay]);
  return [text, (next: string) => {
    setText(next);
    setTyped(true);
  }] as const;
}

export default function RunsPage() {
  const me = useMe();
  const everyone = atLeast(me, "researcher");
  const navigate = useNavigate();
  const [params, setParams] = useSearchParams();
  const ids = useId();

  const filters = Object.fromEntries(FILTERS.map((key) => [key, params.get(key) ?? ""])) as Record<Filter, string>;
  const offset = Math.max(0, Math.floor(Number(params.get("offset")) || 0));
  const filtered = FILTERS.some((key) => filters[key] !== "");

  const setFilter = (key: Filter, value: string, replace = false) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    next.delete("offset");
    setParams(next, { replace });
  };
  const setOffset = (value: number) => {
    const next = new URLSearchParams(params);
    if (value > 0) next.set("offset", String(value));
    else next.delete("offset");
    setParams(next);
  };

  const [search, setSearch] = useDebouncedParam(filters.search, (v) => setFilter("search", v, true));
  const [policy, setPolicy] = useDebouncedParam(filters.policy, (v) => setFilter("policy", v, true));
  const [benchmark, setBenchmark] = useDebouncedParam(filters.benchmark, (v) => setFilter("benchmark", v, true));

  const runs = useQuery({
    queryKey: ["runs", "list", filters, offset],
    queryFn: () => api<Page<Run>>(`/api/runs${query({ ...filters, limit: RUNS_PAGE, offset })}`),
    placeholderData: keepPreviousData,
  });

  // What the filters can offer: the registered policies, and for researchers the owners and
  // benchmarks of recent runs and tasks.
  const options = useQuery({ queryKey: ["options"], queryFn: () => api<Options>("/api/options") });
  const recent = useQuery({
    queryKey: ["runs", "recent-owners"],
    queryFn: () => api<Page<Run>>("/api/runs?limit=200"),
    enabled: everyone,
    staleTime: 60_000,
  });
  const tasks = useQuery({
    queryKey: ["tasks", "recent-benchmarks"],
    queryFn: () => api<Page<Task>>("/api/tasks?limit=200"),
    staleTime: 60_000,
  });
  const owners = new Map<string, string>();
  for (const run of recent.data?.items ?? []) owners.set(String(run.owner_id), run.owner);
  for (const run of runs.data?.items ?? []) owners.set(String(run.owner_id), run.owner);
  if (filters.owner_id && !owners.has(filters.owner_id)) owners.set(filters.owner_id, `user #${filters.owner_id}`);
  const policies = new Set([...(options.data?.policies.map((p) => p.name) ?? []), ...(recent.data?.items.map((r) => r.policy) ?? [])]);
  const benchmarks = new Set((tasks.data?.items ?? []).map((t) => t.benchmark).filter(Boolean));

  // Two runs to compare; kept across pages and filters.
  const [picked, setPicked] = useState<number[]>([]);
  const toggle = (id: number) =>
    setPicked((now) => (now.includes(id) ? now.filter((x) => x !== id) : now.length >= 2 ? now : [...now, id]));

  const open = (id: number) => navigate(`/runs/${id}`);
  const onRowClick = (event: MouseEvent<HTMLTableRowElement>, id: number) => {
    if ((event.target as HTMLElement).closest("a, button, input, label")) return;
    open(id);
  };
  const onRowKey = (event: KeyboardEvent<HTMLTableRowElement>, id: number) => {
    if (event.target !== event.currentTarget) return;
    if (event.key === "Enter") {
      event.preventDefault();
      open(id);
    } else if (event.key === " ") {
      event.preventDefault();
      toggle(id);
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const row = event.currentTarget;
      const next = (event.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling) as HTMLElement | null;
      next?.focus();
    }
  };

  const page = runs.data;
  const count = page?.count ?? 0;

  return (
    <div className="stack runs-page">
      <div className="row">
        <h1>Runs</h1>
        <span className="spacer" />
        <Link to="/">Submit a task</Link>
      </div>

      <form className="runs-filters panel" role="search" aria-label="Filter runs" onSubmit={(event) => event.preventDefault()}>
        <label className="runs-search">
          Search tasks
          <input type="search" value={search} placeholder="Text in the task" onChange={(event) => setSearch(event.target.value)} />
        </label>
        <label>
          Status
          <select value={filters.status} onChange={(event) => setFilter("status", event.target.value)}>
            <option value="">Any</option>
            {STATUSES.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </select>
        </label>
        <label>
          Policy
          <input list={`${ids}-policies`} value={policy} placeholder="Any" onChange={(event) => setPolicy(event.target.value.trim())} />
          <datalist id={`${ids}-policies`}>
            {[...policies].map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
        </label>
        <label>
          Benchmark
          <input list={`${ids}-benchmarks`} value={benchmark} placeholder="Any" onChange={(event) => setBenchmark(event.target.value.trim())} />
          <datalist id={`${ids}-benchmarks`}>
            {[...benchmarks].map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
        </label>
        {everyone && (
          <label>
            Owner
            <select value={filters.owner_id} onChange={(event) => setFilter("owner_id", event.target.value)}>
              <option value="">Everyone</option>
              <option value={String(me.id)}>Me ({me.username})</option>
              {[...owners]
                .filter(([id]) => id !== String(me.id))
                .sort((a, b) => a[1].localeCompare(b[1]))
                .map(([id, name]) => (
                  <option key={id} value={id}>
                    {name}
                  </option>
                ))}
            </select>
          </label>
        )}
        {filtered && (
          <button type="button" className="link runs-clear" onClick={() => setParams(new URLSearchParams())}>
            Clear filters
          </button>
        )}
      </form>

      <div className="runs-compare row" aria-live="polite">
        {picked.length === 0 ? (
          <span className="muted small">Tick two runs of the same task to compare them side by side.</span>
        ) : (
          <>
            <span className="small">
              Picked: {picked.map((id) => `#${id}`).join(" and ")}
              {picked.length === 1 && <span className="muted"> — pick one more</span>}
            </span>
            <button
              type="button"
              className="primary"
              disabled={picked.length !== 2}
              onClick={() => navigate(`/runs/compare${query({ a: picked[0], b: picked[1] })}`)}
            >
              Compare
            </button>
            <button type="button" onClick={() => setPicked([])}>
              Clear
            </button>
          </>
        )}
      </div>

      {runs.isPending ? (
        <Loading what="Loading runs" />
      ) : runs.isError ? (
        <ErrorText error={runs.error} />
      ) : count > 0 && page!.items.length === 0 ? (
        <Empty title="This page is past the last run">
          <button type="button" onClick={() => setOffset(0)}>
            Go to the first page
          </button>
        </Empty>
      ) : count === 0 ? (
        filtered ? (
          <Empty title="No runs match these filters">
            <button type="button" onClick={() => setParams(new URLSearchParams())}>
              Clear filters
            </button>
          </Empty>
        ) : (
          <Empty title="No runs yet">
            <p>
              <Link to="/">Submit a task</Link> to start your first run.
            </p>
          </Empty>
        )
      ) : (
        <>
          <div className="table-wrap runs-table" aria-busy={runs.isFetching}>
            <table>
              <caption className="sr-only">Runs, newest first. Enter opens a run; Space picks it to compare.</caption>
              <thead>
                <tr>
                  <th scope="col" className="runs-pick">
                    <span className="sr-only">Compare</span>
                  </th>
                  <th scope="col">Run</th>
                  <th scope="col">Task</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="runs-mid">Policy</th>
                  {everyone && <th scope="col" className="runs-wide">Owner</th>}
                  <th scope="col" className="num runs-wide">
                    Tokens
                  </th>
                  <th scope="col" className="num">
                    Cost
                  </th>
                  <th scope="col" className="num runs-wide">
                    Latency
                  </th>
                  <th scope="col" className="runs-wide">Created</th>
                </tr>
              </thead>
              <tbody>
                {page!.items.map((run) => {
                  const isPicked = picked.includes(run.id);
                  return (
                    <tr
                      key={run.id}
                      className={`clickable${isPicked ? " picked" : ""}`}
                      tabIndex={0}
                      aria-label={`Run ${run.id}: ${run.status}, ${run.task_text.slice(0, 60)}`}
                      onClick={(event) => onRowClick(event, run.id)}
                      onKeyDown={(event) => onRowKey(event, run.id)}
                    >
                      <td className="runs-pick">
                        <input
                          type="checkbox"
                          aria-label={`Pick run ${run.id} to compare`}
                          checked={isPicked}
                          disabled={!isPicked && picked.length >= 2}
                          onChange={() => toggle(run.id)}
                        />
                      </td>
                      <td className="mono">
                        <Link to={`/runs/${run.id}`} tabIndex={-1}>
                          #{run.id}
                        </Link>
                      </td>
                      <td className="runs-task" title={run.task_text}>
                        <span className="muted mono small" title={`task #${run.task_id}: runs of one task can be compared`}>
                          task #{run.task_id}
                        </span>{" "}
                        {run.task_text}
                      </td>
                      <td>
                        <span className={`status ${run.status}`}>{run.status}</span>
                      </td>
                      <td className="runs-mid">{run.policy}</td>
                      {everyone && <td className="runs-wide">{run.owner}</td>}
                      <td className="num runs-wide">{tokens(run.tokens_in + run.tokens_out)}</td>
                      <td className="num">{usd(run.cost_usd)}</td>
                      <td className="num runs-wide">{seconds(run.latency_s)}</td>
                      <td className="small runs-wide">{when(run.created_at)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <nav className="pager" aria-label="Pages">
            <span className="muted small">
              {offset + 1}–{offset + page!.items.length} of {count}
            </span>
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - RUNS_PAGE))}>
              Prev
            </button>
            <button type="button" disabled={offset + RUNS_PAGE >= count} onClick={() => setOffset(offset + RUNS_PAGE)}>
              Next
            </button>
          </nav>
        </>
      )}
    </div>
  );
}
