// How much labelers agree: Fleiss' κ over all of them, Cohen's κ for every two.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";

import { api, query } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Agreement } from "../../api/types";
import { Scrollable } from "../../components/Scrollable";
import { Empty, ErrorText, Loading } from "../../components/States";
import { SourceSelect } from "./SourceSelect";

/** κ in plain words (Landis & Koch's bands). */
export function kappaReading(kappa: number): string {
  if (kappa < 0) return "worse than chance";
  if (kappa <= 0.2) return "slight agreement";
  if (kappa <= 0.4) return "fair agreement";
  if (kappa <= 0.6) return "moderate agreement";
  if (kappa <= 0.8) return "substantial agreement";
  return "almost perfect agreement";
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function AgreementView() {
  const [source, setSource] = useState("");
  const [overlap, setOverlap] = useState("5");
  const minOverlap = Math.min(100_000, Math.max(1, Math.floor(Number(overlap)) || 1));
  const agreement = useQuery({
    queryKey: keys.preferences.agreement(source, minOverlap),
    queryFn: () => api<Agreement>(`/api/preferences/agreement${query({ source, min_overlap: minOverlap })}`),
  });

  return (
    <div className="stack">
      <p className="muted">
        κ (kappa) is how often labelers agree beyond what chance alone would give: <b>1</b> means they always agree,{" "}
        <b>0</b> no better than chance, below 0 worse than chance. Above 0.6 is usually good enough to train on; below
        0.4, the task or the instructions are probably unclear. Skips are left out.
      </p>
      <div className="row">
        <SourceSelect value={source} onChange={setSource} />
        <label>
          Minimum shared pairs (Cohen&apos;s κ)
          <input
            type="number"
            min={1}
            max={100000}
            value={overlap}
            onChange={(event) => setOverlap(event.target.value)}
          />
        </label>
      </div>
      {agreement.isPending ? (
        <Loading what="Computing agreement" />
      ) : agreement.isError ? (
        <ErrorText error={agreement.error} />
      ) : agreement.data.pairs === 0 ? (
        <Empty title="No agreement to measure yet">
          <p>Agreement needs pairs that at least two people labeled (skips do not count).</p>
        </Empty>
      ) : (
        <AgreementResult data={agreement.data} />
      )}
    </div>
  );
}

function AgreementResult({ data }: { data: Agreement }) {
  return (
    <div className="stack">
      <p>
        <b>{plural(data.pairs, "pair")}</b> labeled by two or more people, <b>{data.labels}</b> labels from{" "}
        <b>{plural(data.labelers, "labeler")}</b>.
      </p>
      <div className="panel stack">
        <h2 className="label-h">All labelers: Fleiss&apos; κ</h2>
        {data.fleiss ? (
          <p>
            <span className="label-kappa">{data.fleiss.kappa.toFixed(2)}</span> {kappaReading(data.fleiss.kappa)}, over{" "}
            {plural(data.fleiss.pairs, "pair")} with {data.fleiss.raters} labels each.
          </p>
        ) : (
          <p className="muted">Not enough pairs with the same number of labels.</p>
        )}
      </div>
      <div className="panel stack">
        <h2 className="label-h">Two labelers at a time: Cohen&apos;s κ</h2>
        {data.cohen.length === 0 ? (
          <p className="muted">
            No two labelers share at least {plural(data.min_overlap, "labeled pair")}. Lower the minimum above to see
            smaller overlaps (fewer shared pairs make κ less reliable).
          </p>
        ) : (
          <CohenTable rows={data.cohen} />
        )}
      </div>
    </div>
  );
}

function CohenTable({ rows }: { rows: Agreement["cohen"] }) {
  return (
    <Scrollable className="table-wrap" label="Cohen's κ per two labelers">
      <table>
        <thead>
          <tr>
            <th scope="col">Labelers</th>
            <th scope="col" className="num">
              Shared pairs
            </th>
            <th scope="col" className="num">
              κ
            </th>
            <th scope="col">Reading</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={`${row.labeler_a}/${row.labeler_b}`}>
              <td>
                {row.labeler_a} &amp; {row.labeler_b}
              </td>
              <td className="num">{row.overlap}</td>
              <td className="num">{row.kappa.toFixed(2)}</td>
              <td>{kappaReading(row.kappa)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scrollable>
  );
}
