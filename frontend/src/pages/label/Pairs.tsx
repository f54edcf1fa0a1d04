// Researchers: the JSONL export, importing pairs, pairing two runs by id, and the pairs.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent, type ReactNode } from "react";
import { Link } from "react-router";

import { api, query, type Page } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Pair } from "../../api/types";
import { Scrollable } from "../../components/Scrollable";
import { ErrorText, Loading } from "../../components/States";
import { when } from "../../lib/format";
import { ImportPairs } from "./Import";
import { SourceSelect } from "./SourceSelect";

export function PairsAndExport() {
  const [source, setSource] = useState("");
  return (
    <div className="stack">
      <section className="panel stack" aria-labelledby="label-export-h">
        <h2 className="label-h" id="label-export-h">
          Export as JSONL
        </h2>
        <p className="muted">
          One line per pair with a winner (the labels&apos; majority, or the winner a self-supervised or imported pair
          came with), in the TRL preference format: prompt, chosen, rejected and both plans. Pairs that are tied,
          without a majority or not labeled yet are left out.
        </p>
        <div className="row label-export">
          <SourceSelect value={source} onChange={setSource} />
          <a className="button-link" href={`/api/preferences/export${query({ source })}`} download="preferences.jsonl">
            Download preferences.jsonl
          </a>
        </div>
      </section>
      <ImportPairs />
      <CreatePair />
      <PairList />
    </div>
  );
}

function CreatePair() {
  const client = useQueryClient();
  const [runA, setRunA] = useState("");
  const [runB, setRunB] = useState("");
  const create = useMutation({
    mutationFn: () =>
      api<Pair>("/api/preferences/pairs", {
        method: "POST",
        body: { run_a_id: Number(runA), run_b_id: Number(runB), source: "human", metadata: {} },
      }),
    onSuccess: () => {
      setRunA("");
      setRunB("");
      void client.invalidateQueries({ queryKey: keys.preferences.all });
    },
  });
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  const valid = /^\d+$/.test(runA) && /^\d+$/.test(runB) && runA !== runB;
  return (
    <section className="panel stack" aria-labelledby="label-pair-h">
      <h2 className="label-h" id="label-pair-h">
        Pair two runs
      </h2>
      <p className="muted">
        Two finished runs of the same task become a pair for labelers. Easiest: pick two runs on the{" "}
        <Link to="/runs">Runs</Link> page and compare them. Or give their ids here.
      </p>
      <form className="row label-pair-form" onSubmit={onSubmit}>
        <label>
          Run A id
          <input inputMode="numeric" value={runA} onChange={(event) => setRunA(event.target.value.trim())} />
        </label>
        <label>
          Run B id
          <input inputMode="numeric" value={runB} onChange={(event) => setRunB(event.target.value.trim())} />
        </label>
        <button type="submit" className="primary" disabled={!valid || create.isPending}>
          {create.isPending ? "Pairing…" : "Pair for labeling"}
        </button>
      </form>
      {create.isError && <ErrorText error={create.error} />}
      {create.isSuccess && (
        <p role="status">
          ✓ Pair #{create.data.id} made (runs #{create.data.run_a_id} and #{create.data.run_b_id}, task #
          {create.data.task_id}). It is in the labeling queue now.
        </p>
      )}
    </section>
  );
}

const PAIRS_PAGE = 10;

function PairList() {
  const [offset, setOffset] = useState(0);
  const pairs = useQuery({
    queryKey: keys.preferences.pairs(offset),
    queryFn: () => api<Page<Pair>>(`/api/preferences/pairs${query({ limit: PAIRS_PAGE, offset })}`),
    placeholderData: (previous) => previous,
  });
  let body: ReactNode;
  if (pairs.isPending) body = <Loading what="Loading pairs" />;
  else if (pairs.isError) body = <ErrorText error={pairs.error} />;
  else if (pairs.data.count === 0) body = <p className="muted">No pairs yet.</p>;
  else {
    const { items, count } = pairs.data;
    body = (
      <>
        <PairTable items={items} />
        <div className="pager">
          <span className="muted small">
            {offset + 1}–{offset + items.length} of {count}
          </span>
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAIRS_PAGE))}>
            Prev
          </button>
          <button type="button" disabled={offset + PAIRS_PAGE >= count} onClick={() => setOffset(offset + PAIRS_PAGE)}>
            Next
          </button>
        </div>
      </>
    );
  }
  return (
    <section className="panel stack" aria-labelledby="label-pairs-h">
      <h2 className="label-h" id="label-pairs-h">
        Pairs
      </h2>
      {body}
    </section>
  );
}

function PairTable({ items }: { items: Pair[] }) {
  return (
    <Scrollable className="table-wrap" label="Pairs">
      <table>
        <thead>
          <tr>
            <th scope="col">Pair</th>
            <th scope="col">Runs</th>
            <th scope="col">Source</th>
            <th scope="col" className="num">
              Labels
            </th>
            <th scope="col">Made</th>
          </tr>
        </thead>
        <tbody>
          {items.map((pair) => (
            <tr key={pair.id} data-testid="pair-row" data-pair-id={pair.id}>
              <td>#{pair.id}</td>
              <td>
                <Link to={`/runs/compare${query({ a: pair.run_a_id, b: pair.run_b_id })}`}>
                  #{pair.run_a_id} vs #{pair.run_b_id}
                </Link>
              </td>
              <td>
                {pair.source.replaceAll("_", " ")}
                {pair.metadata?.preferred ? <span className="muted small"> (winner known)</span> : null}
              </td>
              <td className="num">{pair.label_count}</td>
              <td className="small">{when(pair.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scrollable>
  );
}
