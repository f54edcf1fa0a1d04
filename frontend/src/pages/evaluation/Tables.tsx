// An evaluation's numbers: the metrics table and the per-domain breakdown.
import { Scrollable } from "../../components/Scrollable";
import { pct } from "../../lib/format";
import { formatKnob, metricsRows, perDomain, usdPerQuery, type EvaluationReport } from "../../lib/pareto";

export const fixed = (value: number | null, digits = 3) => (value === null ? "–" : value.toFixed(digits));

export function MetricsTable({ report }: { report: EvaluationReport }) {
  const rows = metricsRows(report);
  return (
    <section className="panel" aria-label="Metrics">
      <h2>Metrics</h2>
      <p className="muted small">
        A method with a knob shows its most accurate point; AIQ, APGR and CPT use all its points (docs/evaluation.md).
      </p>
      <Scrollable className="table-wrap" label="Metrics">
        <table data-testid="metrics-table">
          <thead>
            <tr>
              <th scope="col">Method</th>
              <th scope="col">Macro pass@1</th>
              <th scope="col">$/query</th>
              <th scope="col">AIQ</th>
              <th scope="col">APGR</th>
              <th scope="col">CPT 50%</th>
              <th scope="col">CPT 80%</th>
              <th scope="col">Calls/query</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.method} data-method={r.method} className={r.notApplicable ? "not-applicable" : undefined}>
                <th scope="row">
                  {r.method}
                  {r.method === "oracle" && <span className="muted small"> (upper bound)</span>}
                  {r.bestKnob !== null && (
                    <span className="muted small"> best @ {formatKnob(r.method, r.bestKnob)}</span>
                  )}
                </th>
                {r.notApplicable !== null ? (
                  <td colSpan={7} className="muted">
                    does not apply: {r.notApplicable}
                  </td>
                ) : (
                  <>
                    <td>{fixed(r.macroAcc)}</td>
                    <td>{usdPerQuery(r.costPerQuery)}</td>
                    <td>{fixed(r.aiq)}</td>
                    <td>{fixed(r.apgr)}</td>
                    <td>{r.cpt50 === null ? "never" : pct(r.cpt50)}</td>
                    <td>{r.cpt80 === null ? "never" : pct(r.cpt80)}</td>
                    <td>{fixed(r.callsPerQuery, 2)}</td>
                  </>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </Scrollable>
    </section>
  );
}

export function PerDomainTable({ report }: { report: EvaluationReport }) {
  const { domains, rows } = perDomain(report);
  return (
    <section className="panel" aria-label="Per-domain accuracy">
      <h2>Per domain</h2>
      <p className="muted small">pass@1 in each domain at each method's most accurate point.</p>
      {domains.length === 0 ? (
        <p className="muted">The report has no per-domain accuracy.</p>
      ) : (
        <Scrollable className="table-wrap" label="Accuracy per domain">
          <table data-testid="per-domain">
            <thead>
              <tr>
                <th scope="col">Method</th>
                {domains.map((d) => (
                  <th scope="col" key={d}>
                    {d}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.method} data-method={r.method}>
                  <th scope="row">{r.method}</th>
                  {r.values.map((v, k) => (
                    <td key={domains[k]}>{fixed(v)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </Scrollable>
      )}
    </section>
  );
}
