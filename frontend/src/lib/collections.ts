// Collections without React: their statuses, progress, the pairs a pool offers and pasted task ids.
import type { Admissibility, Collection, CollectionPair, Endpoint } from "../api/types";

/** Still queued or running: the list keeps looking, and it may be cancelled. */
export const ACTIVE = new Set(["queued", "running"]);
/** Ended short of done: it may be queued again. */
export const RESUMABLE = new Set(["stopped", "cancelled", "failed"]);

/** The cells that have ended (recorded, or failed after their retries) and all of them. */
export function progressOf(collection: Collection): { done: number; total: number } {
  const { recorded, failed, total } = collection.cells;
  return { done: recorded + failed, total };
}

/** A pair as the form's checkboxes name it. */
export interface PoolPair extends CollectionPair {
  key: string;
  label: string;
}

/** The pool's (endpoint, primitive) pairs a collection may call: admissible, on an enabled endpoint; by name. */
export function poolPairs(endpoints: Endpoint[], admissibility: Admissibility[]): PoolPair[] {
  const byId = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
  return admissibility
    .flatMap((row) => {
      const endpoint = byId.get(row.endpoint_id);
      if (!row.allowed || !endpoint?.enabled) return [];
      return [
        {
          endpoint_id: endpoint.id,
          primitive: row.primitive_name,
          key: `${endpoint.id}/${row.primitive_name}`,
          label: `${endpoint.name} · ${row.primitive_name}`,
        },
      ];
    })
    .sort((a, b) => a.label.localeCompare(b.label));
}

/** Task ids typed or pasted, split on commas, spaces or lines: the ids (each once) and what is not one. */
export function parseTaskIds(text: string): { ids: number[]; bad: string[] } {
  const ids = new Set<number>();
  const bad: string[] = [];
  for (const token of text.split(/[\s,;]+/).filter(Boolean)) {
    const id = /^\d+$/.test(token) ? Number(token) : NaN;
    if (Number.isSafeInteger(id) && id > 0) ids.add(id);
    else bad.push(token);
  }
  return { ids: [...ids], bad };
}
