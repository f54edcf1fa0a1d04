// An evaluation's numbers: the metrics table and the per-domain breakdown.
import { Scrollable } from "../../components/Scrollable";
import { pct } from "../../lib/format";
import {
  dominatedPoints,
  formatKnob,
  metricsRows,
  perDomain,
  presetChecks,
  presetLine,
  presetVerdict,
  usdPerQuery,
  zeroOwnDominated,
  type EvaluationReport,
} from "../../lib/pareto";

export const fixed = (value: number | null, digits = 3) => (value === null ? "–" : value.toFixed(digits));

export function MetricsTable({ report }: { report: EvaluationReport }) {
  const rows = metricsRows(report);
  const dominated = dominatedPoints(report);
  const zeroOwn = zeroOwnDominated(report);
  const presets = presetChecks(report);
  // The CLI counts against the zero router's hull only where the zero router ran.
  const zeroRan = report.methods?.zero !== undefined && report.methods.zero.not_applicable === undefined;
  return (
    <section className="panel" aria-label="Metrics">
      <h2>Metrics</h2>
      <p className="muted small">
        A method with a knob shows its most accurate point; AIQ, APGR and CPT use all its points (docs/evaluation.md).
        The zero router is the baseline with no prompt features: fixed pairs, and random mixes of two neighbouring ones
        on their cost/accuracy hull. AIQ (RouterBench) is RouterBench's own AIQ: the area under the non-decreasing hull,
        with no abstain point, extended flat to the dearest single pair's cost, divided by that cost.
      </p>
      <Scrollable className="table-wrap" label="Metrics">
        <table data-testid="metrics-table">
          <thead>
            <tr>
              <th scope="col">Method</th>
              <th scope="col">Macro pass@1</th>
              <th scope="col">$/query</th>
              <th scope="col">AIQ</th>
              <th scope="col">AIQ (RouterBench)</th>
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
                  {r.method === "zero" && <span className="muted small"> (fixed pairs, no prompt)</span>}
                  {r.bestKnob !== null && (
                    <span className="muted small"> best @ {formatKnob(r.method, r.bestKnob)}</span>
                  )}
                </th>
                {r.notApplicable !== null ? (
                  <td colSpan={8} className="muted">
                    does not apply: {r.notApplicable}
                  </td>
                ) : (
                  <>
                    <td>{fixed(r.macroAcc)}</td>
                    <td>{usdPerQuery(r.costPerQuery)}</td>
                    <td>{fixed(r.aiq)}</td>
                    <td>{fixed(r.aiqRb)}</td>
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
      {dominated.length > 0 && (
        <p className="muted small" data-testid="dominated-points">
          Dominated points ({zeroRan ? "a single pair or the zero router" : "a single pair"} does better at no more
          cost): {dominated.map(([method, count]) => `${method} ${count}`).join(", ")}
          {zeroOwn !== null &&
            `; the zero router's own, by a single pair or its other points (a router that reads no prompt): ${zeroOwn}`}
        </p>
      )}
      {presets.length > 0 && (
        <ul
          className="preset-checks muted small"
          aria-label="Presets of the learned policy"
          data-testid="preset-checks"
        >
          {presets.map(([name, check]) => (
            <li key={name} data-preset={name} data-held={check.held}>
              {presetLine(name, check)}:{" "}
              {check.held ? presetVerdict(check) : <span className="status failed">{presetVerdict(check)}</span>}
            </li>
          ))}
        </ul>
      )}
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
