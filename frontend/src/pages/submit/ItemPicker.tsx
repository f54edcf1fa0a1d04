// A composite task's items: search the recorded outcomes of a source, add up to MAX_ITEMS.
import { useQuery } from "@tanstack/react-query";
import { useDeferredValue, useId, useState } from "react";

import { api, query, type Page } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { RecordedItem } from "../../api/types";
import { ErrorText, Loading } from "../../components/States";

const ITEMS_PAGE = 8;
export const MAX_ITEMS = 32;

export function ItemPicker(props: {
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
    queryKey: keys.recordedItems(source, deferred, offset),
    queryFn: ({ signal }) =>
      api<Page<RecordedItem>>(`/api/recorded-items${query({ source, search: deferred, limit: ITEMS_PAGE, offset })}`, {
        signal,
      }),
    placeholderData: (previous) => previous,
  });
  const chosen = new Set(items.map((item) => `${item.source}/${item.item_id}`));

  if (sources.length === 0)
    return (
      <p className="muted">
        No recorded outcomes are imported yet, so there is nothing to compose. <code>make up</code> imports the shipped
        ones.
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
      <h2 className="submit-chosen">
        Chosen ({items.length}/{MAX_ITEMS})
      </h2>
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
