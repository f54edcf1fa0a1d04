// The runs list's filters: search, status, policy, benchmark and, for researchers, owner.
// They live in the URL; text filters are written a moment after typing stops.
import { useQuery } from "@tanstack/react-query";
import { useId } from "react";

import { api, fetchAll } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Me, Options, User } from "../../api/types";
import { useDebouncedParam } from "./useDebouncedParam";

export const STATUSES = ["pending", "running", "succeeded", "failed", "cancelled"] as const;
/** The URL's filter keys, as the API names them. */
export const FILTERS = ["status", "policy", "benchmark", "owner_id", "search"] as const;
export type Filter = (typeof FILTERS)[number];

interface Props {
  filters: Record<Filter, string>;
  setFilter: (key: Filter, value: string, replace?: boolean) => void;
  /** Researchers filter by owner. */
  me: Me;
  everyone: boolean;
  onClear: (() => void) | null;
}

export function RunsFilters({ filters, setFilter, me, everyone, onClear }: Props) {
  const ids = useId();
  const [search, setSearch] = useDebouncedParam(filters.search, (v) => setFilter("search", v, true));
  const [policy, setPolicy] = useDebouncedParam(filters.policy, (v) => setFilter("policy", v, true));
  const [benchmark, setBenchmark] = useDebouncedParam(filters.benchmark, (v) => setFilter("benchmark", v, true));
  // What the filters offer: the registered policies and the benchmarks of your tasks.
  const options = useQuery({ queryKey: keys.options, queryFn: () => api<Options>("/api/options") });

  return (
    <form
      className="runs-filters panel"
      role="search"
      aria-label="Filter runs"
      onSubmit={(event) => event.preventDefault()}
    >
      <label className="runs-search">
        Search tasks
        <input
          type="search"
          value={search}
          placeholder="Text in the task"
          onChange={(event) => setSearch(event.target.value)}
        />
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
        <input
          list={`${ids}-policies`}
          value={policy}
          placeholder="Any"
          onChange={(event) => setPolicy(event.target.value.trim())}
        />
        <datalist id={`${ids}-policies`}>
          {options.data?.policies.map((p) => (
            <option key={p.name} value={p.name} />
          ))}
        </datalist>
      </label>
      <label>
        Benchmark
        <input
          list={`${ids}-benchmarks`}
          value={benchmark}
          placeholder="Any"
          onChange={(event) => setBenchmark(event.target.value.trim())}
        />
        <datalist id={`${ids}-benchmarks`}>
          {options.data?.benchmarks.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
      </label>
      {everyone && <OwnerFilter value={filters.owner_id} me={me} onChange={(v) => setFilter("owner_id", v)} />}
      {onClear && (
        <button type="button" className="link runs-clear" onClick={onClear}>
          Clear filters
        </button>
      )}
    </form>
  );
}

/** Every user (GET /api/users, every page), by name, you first. */
function OwnerFilter({ value, me, onChange }: { value: string; me: Me; onChange: (value: string) => void }) {
  const users = useQuery({
    queryKey: keys.users,
    queryFn: ({ signal }) => fetchAll<User>("/api/users", {}, signal),
    staleTime: 60_000,
  });
  const others = (users.data ?? []).filter((user) => user.id !== me.id);
  const known = value === "" || value === String(me.id) || others.some((user) => String(user.id) === value);
  return (
    <label>
      Owner
      <select value={value} onChange={(event) => onChange(event.target.value)}>
        <option value="">Everyone</option>
        <option value={String(me.id)}>Me ({me.username})</option>
        {others.map((user) => (
          <option key={user.id} value={String(user.id)}>
            {user.username}
          </option>
        ))}
        {!known && <option value={value}>user #{value}</option>}
      </select>
    </label>
  );
}
