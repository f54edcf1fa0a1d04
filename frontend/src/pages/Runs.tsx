// Runs: a filtered, paged table (filters live in the URL), and two runs picked to compare.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";

import { api, query, type Page } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Run } from "../api/types";
import { atLeast, useMe } from "../auth";
import { Empty, ErrorText, Loading } from "../components/States";
import { FILTERS, RunsFilters, type Filter } from "./runs/RunsFilters";
import { RunsTable } from "./runs/RunsTable";
import "./Runs.css";

export const RUNS_PAGE = 25;

export default function RunsPage() {
  const me = useMe();
  const everyone = atLeast(me, "researcher");
  const navigate = useNavigate();
  const [params, setParams] = useSearchParams();

  const filters = Object.fromEntries(FILTERS.map((key) => [key, params.get(key) ?? ""])) as Record<Filter, string>;
  const offset = Math.max(0, Math.floor(Number(params.get("offset")) || 0));
  const filtered = FILTERS.some((key) => filters[key] !== "");
  const clear = () => setParams(new URLSearchParams());

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

  const runs = useQuery({
    queryKey: keys.runs.list(filters, offset),
    queryFn: () => api<Page<Run>>(`/api/runs${query({ ...filters, limit: RUNS_PAGE, offset })}`),
    placeholderData: keepPreviousData,
  });

  // Two runs to compare; kept across pages and filters.
  const [picked, setPicked] = useState<number[]>([]);
  const toggle = (id: number) =>
    setPicked((now) => (now.includes(id) ? now.filter((x) => x !== id) : now.length >= 2 ? now : [...now, id]));

  const page = runs.data;
  const count = page?.count ?? 0;
  let body;
  if (runs.isPending) body = <Loading what="Loading runs" />;
  else if (runs.isError) body = <ErrorText error={runs.error} />;
  else if (count > 0 && page?.items.length === 0)
    body = (
      <Empty title="This page is past the last run">
        <button type="button" onClick={() => setOffset(0)}>
          Go to the first page
        </button>
      </Empty>
    );
  else if (count === 0) body = <NoRuns filtered={filtered} clear={clear} />;
  else
    body = (
      <>
        <RunsTable
          runs={page?.items ?? []}
          busy={runs.isFetching}
          everyone={everyone}
          picked={picked}
          toggle={toggle}
        />
        <nav className="pager" aria-label="Pages">
          <span className="muted small">
            {offset + 1}–{offset + (page?.items.length ?? 0)} of {count}
          </span>
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - RUNS_PAGE))}>
            Prev
          </button>
          <button type="button" disabled={offset + RUNS_PAGE >= count} onClick={() => setOffset(offset + RUNS_PAGE)}>
            Next
          </button>
        </nav>
      </>
    );

  return (
    <div className="stack runs-page">
      <div className="row">
        <h1>Runs</h1>
        <span className="spacer" />
        <Link to="/">Submit a task</Link>
      </div>
      <RunsFilters
        filters={filters}
        setFilter={setFilter}
        me={me}
        everyone={everyone}
        onClear={filtered ? clear : null}
      />
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
              onClick={() => void navigate(`/runs/compare${query({ a: picked[0], b: picked[1] })}`)}
            >
              Compare
            </button>
            <button type="button" onClick={() => setPicked([])}>
              Clear
            </button>
          </>
        )}
      </div>
      {body}
    </div>
  );
}

function NoRuns({ filtered, clear }: { filtered: boolean; clear: () => void }) {
  return filtered ? (
    <Empty title="No runs match these filters">
      <button type="button" onClick={clear}>
        Clear filters
      </button>
    </Empty>
  ) : (
    <Empty title="No runs yet">
      <p>
        <Link to="/">Submit a task</Link> to start your first run.
      </p>
    </Empty>
  );
}
