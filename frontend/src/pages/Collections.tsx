// Collections: start one (a pool's pairs on chosen tasks within a budget), and follow every
// collection's progress, spend and status, polled while any is queued or running; cancel or
// resume one. Pages of the list live in the URL (`?offset=`).
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useSearchParams } from "react-router";

import { api, mayHeal, query, withFirst, type Page } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Collection } from "../api/types";
import { Empty, ErrorText, Loading } from "../components/States";
import { ACTIVE } from "../lib/collections";
import { CollectionTable } from "./collections/CollectionTable";
import { StartForm } from "./collections/StartForm";
import "./Collections.css";

export const COLLECTIONS_PAGE = 20;
/** How often the list looks again while a collection on it is queued or running. */
export const POLL_MS = 2000;

export default function CollectionsPage() {
  const client = useQueryClient();
  const [params, setParams] = useSearchParams();
  const offset = Math.max(0, Math.floor(Number(params.get("offset")) || 0));
  const setOffset = (value: number) => setParams(value > 0 ? { offset: String(value) } : {});
  const collections = useQuery({
    queryKey: keys.collections.list(offset),
    queryFn: ({ signal }) =>
      api<Page<Collection>>(`/api/collections${query({ limit: COLLECTIONS_PAGE, offset })}`, { signal }),
    placeholderData: keepPreviousData,
    // Polled while one on the page works, and after a failure that may heal (a restarting server).
    refetchInterval: (q) =>
      q.state.data?.items.some((c) => ACTIVE.has(c.status)) || mayHeal(q.state.error) ? POLL_MS : false,
  });
  const started = (collection: Collection) => {
    // The first page shows the new collection at once (and so keeps looking while it runs).
    client.setQueryData<Page<Collection>>(keys.collections.list(0), (page) => withFirst(page, collection));
    void client.invalidateQueries({ queryKey: keys.collections.all });
    setOffset(0);
  };

  const page = collections.data;
  const count = page?.count ?? 0;
  let body;
  if (collections.isPending) body = <Loading what="Loading collections" />;
  else if (collections.isError && !page) body = <ErrorText error={collections.error} />;
  else if (count === 0)
    body = (
      <Empty title="No collection yet">
        <p>
          Start one above: it calls the pool&apos;s chosen pairs on each task within the budget, and keeps every answer
          as a recorded outcome a policy can train or calibrate on.
        </p>
      </Empty>
    );
  else if (page?.items.length === 0)
    body = (
      <Empty title="This page is past the last collection">
        <button type="button" onClick={() => setOffset(0)}>
          Go to the first page
        </button>
      </Empty>
    );
  else
    body = (
      <>
        {collections.isError && <ErrorText error={collections.error} />}
        <CollectionTable collections={page?.items ?? []} />
        <nav className="pager" aria-label="Pages">
          <span className="muted small">
            {offset + 1}–{offset + (page?.items.length ?? 0)} of {count}
          </span>
          <button
            type="button"
            disabled={offset === 0}
            onClick={() => setOffset(Math.max(0, offset - COLLECTIONS_PAGE))}
          >
            Prev
          </button>
          <button
            type="button"
            disabled={offset + COLLECTIONS_PAGE >= count}
            onClick={() => setOffset(offset + COLLECTIONS_PAGE)}
          >
            Next
          </button>
        </nav>
      </>
    );

  return (
    <div className="collections-page stack">
      <h1>Collections</h1>
      <StartForm onStarted={started} />
      <section className="panel stack" aria-labelledby="collections-heading">
        <h2 id="collections-heading">Collections</h2>
        {body}
      </section>
    </div>
  );
}
