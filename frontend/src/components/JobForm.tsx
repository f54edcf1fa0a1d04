// Pieces shared by the forms that start background jobs (training, evaluation).
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";

import { fetchAll } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Collection } from "../api/types";
import { ErrorText, Loading } from "./States";

/** A job still queued or running; anything else has ended. */
export const ACTIVE = new Set(["queued", "running"]);

export function SeedField({ seed, setSeed }: { seed: number; setSeed: (seed: number) => void }) {
  return (
    <label>
      Seed
      <input
        type="number"
        min={0}
        step={1}
        value={seed}
        onChange={(e) => setSeed(Math.max(0, Number(e.target.value) || 0))}
      />
    </label>
  );
}

/**
 * Collections whose recorded outcomes a job also uses (trains or tests on): each one with a
 * recorded cell, ticked by id. Nothing to choose: says where collections are made.
 */
export function CollectionChoice({
  chosen,
  setChosen,
  legend,
}: {
  chosen: number[];
  setChosen: (ids: number[]) => void;
  legend: string;
}) {
  const collections = useQuery({
    queryKey: keys.collections.every,
    queryFn: ({ signal }) => fetchAll<Collection>("/api/collections", {}, signal),
  });
  const usable = (collections.data ?? []).filter((c) => c.cells.recorded > 0);
  const toggle = (id: number) => setChosen(chosen.includes(id) ? chosen.filter((c) => c !== id) : [...chosen, id]);
  return (
    <fieldset className="outcomes" data-testid="collection-choice">
      <legend>{legend}</legend>
      {collections.isPending && <Loading what="Loading the collections" />}
      {collections.isError && <ErrorText error={collections.error} />}
      {collections.isSuccess && usable.length === 0 && (
        <p className="muted small">
          None has recorded outcomes yet: <Link to="/collections">collect on your pool</Link> first.
        </p>
      )}
      {usable.map((c) => (
        <label key={c.id} className="inline">
          <input type="checkbox" checked={chosen.includes(c.id)} onChange={() => toggle(c.id)} /> #{c.id}{" "}
          {c.name || c.source}{" "}
          <span className="muted small">
            ({c.cells.recorded} outcomes, {c.pool_name})
          </span>
        </label>
      ))}
    </fieldset>
  );
}
