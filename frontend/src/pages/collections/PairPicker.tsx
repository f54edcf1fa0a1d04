// The (endpoint, primitive) pairs of a pool a collection calls: each admissible pair on an
// enabled endpoint, all ticked until the user unticks some.
import { useQuery } from "@tanstack/react-query";

import { fetchAll } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Admissibility, Endpoint } from "../../api/types";
import { FieldNote, Loading } from "../../components/States";
import { poolPairs, type PoolPair } from "../../lib/collections";

/** The pool's pairs, read as the Pools page reads them (so both share the cache). */
export function usePoolPairs(poolId: number | null) {
  const endpoints = useQuery({
    queryKey: keys.pools.endpoints(poolId ?? 0),
    queryFn: ({ signal }) => fetchAll<Endpoint>(`/api/pools/${poolId}/endpoints`, {}, signal),
    enabled: poolId !== null,
  });
  const admissible = useQuery({
    queryKey: keys.pools.admissibility(poolId ?? 0),
    queryFn: ({ signal }) => fetchAll<Admissibility>("/api/admissibility", { pool_id: poolId }, signal),
    enabled: poolId !== null,
  });
  const pairs = endpoints.data && admissible.data ? poolPairs(endpoints.data, admissible.data) : undefined;
  return { pairs, error: endpoints.error ?? admissible.error, pending: endpoints.isPending || admissible.isPending };
}

interface Props {
  pairs: PoolPair[] | undefined;
  pending: boolean;
  /** The keys ticked; null: every pair. */
  picked: string[] | null;
  onPick: (picked: string[] | null) => void;
  error: string | undefined;
  errorId: string;
}

export function PairPicker({ pairs, pending, picked, onPick, error, errorId }: Props) {
  const all = pairs ?? [];
  const ticked = (pair: PoolPair) => picked === null || picked.includes(pair.key);
  const count = all.filter(ticked).length;
  const toggle = (pair: PoolPair) => {
    const now = all.filter(ticked).map((each) => each.key);
    onPick(now.includes(pair.key) ? now.filter((key) => key !== pair.key) : [...now, pair.key]);
  };
  return (
    <fieldset
      className="choices"
      data-testid="collection-pairs"
      aria-invalid={error ? true : undefined}
      aria-describedby={error ? errorId : undefined}
    >
      <legend>
        Pairs{" "}
        <span className="muted small">
          ({count} of {all.length} ticked)
        </span>
      </legend>
      {pending && <Loading what="Loading the pool's pairs" />}
      {pairs && all.length === 0 && (
        <p className="muted small">
          This pool has no admissible pair on an enabled endpoint. An admin allows pairs on the Pools page.
        </p>
      )}
      {all.length > 1 && (
        <div className="row">
          <button type="button" className="link" onClick={() => onPick(null)} disabled={count === all.length}>
            Tick all
          </button>
          <button type="button" className="link" onClick={() => onPick([])} disabled={count === 0}>
            Untick all
          </button>
        </div>
      )}
      <div className="pair-list">
        {all.map((pair) => (
          <label key={pair.key} className="inline">
            <input type="checkbox" checked={ticked(pair)} onChange={() => toggle(pair)} /> {pair.label}
          </label>
        ))}
      </div>
      <FieldNote id={errorId} message={error} />
    </fieldset>
  );
}
