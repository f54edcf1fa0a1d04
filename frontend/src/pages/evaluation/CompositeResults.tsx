// A composite evaluation's report (orchestrator.evaluate_composite --json): its assumptions,
// each method's AIQ over the seeds, how often the methods that choose split a composite,
// and the sensitivity to the interference penalty.
import { Scrollable } from "../../components/Scrollable";
import { fixed } from "./Tables";

export interface CompositeMethod {
  aiq: number[];
  aiq_mean: number;
  aiq_sd: number;
  score: number;
  cost: number;
  decompose_rate: number;
}

export interface CompositeSummary {
  order?: string[];
  penalty: number;
  seeds: number[];
  test: Record<string, number>;
  planner: string;
  methods: Record<string, CompositeMethod>;
  rates: Record<string, Record<string, (number | null)[]>>;
  decisions: Record<string, number | null>;
  sensitivity: Record<string, Record<string, number>>;
}

export interface CompositeReport {
  kind: "composites";
  assumptions: string;
  summary: CompositeSummary;
}

export function isCompositeReport(report: unknown): report is CompositeReport {
  return (
    typeof report === "object" &&
    report !== null &&
    (report as { kind?: unknown }).kind === "composites" &&
    typeof (report as { summary?: unknown }).summary === "object"
  );
}

export function CompositeResults({ report }: { report: CompositeReport }) {
  const { summary } = report;
  // In the evaluation's order: a stored report's object keys come back sorted otherwise.
  const order = summary.order ?? Object.keys(summary.methods);
  const methods = order.filter((name) => name in summary.methods).map((name) => [name, summary.methods[name]] as const);
  const best = Math.max(...methods.map(([, m]) => m.aiq_mean));
  const lambdas = Object.keys(Object.values(summary.rates)[0] ?? {});
  const penalties = Object.keys(summary.sensitivity);
  const test = Object.entries(summary.test)
    .map(([kind, count]) => `${count} ${kind.replace("_", "-")}`)
    .join(", ");
  return (
    <>
      <p className="muted small" data-testid="composite-assumptions">
        {report.assumptions} Seeds {summary.seeds.join(", ")}; planner {summary.planner}; test composites of seed{" "}
        {summary.seeds[0]}: {test}.
      </p>
      <section className="panel" aria-label="Composite methods">
        <h2>Composites: split or solve whole (interference penalty {summary.penalty})</h2>
        <Scrollable className="table-wrap" label="Composite methods">
          <table data-testid="composite-table">
            <thead>
              <tr>
                <th scope="col">Method</th>
                <th scope="col">AIQ (mean ± sd)</th>
                <th scope="col">AIQ per seed</th>
                <th scope="col">Best score</th>
                <th scope="col">$/composite there</th>
                <th scope="col">Split rate there</th>
              </tr>
            </thead>
            <tbody>
              {methods.map(([name, m]) => (
                <tr key={name} data-method={name} className={m.aiq_mean === best ? "best" : undefined}>
                  <th scope="row">{name}</th>
                  <td>
                    {m.aiq_mean === best ? <b>{fixed(m.aiq_mean, 4)}</b> : fixed(m.aiq_mean, 4)} ± {fixed(m.aiq_sd, 4)}
                  </td>
                  <td>{m.aiq.map((a) => fixed(a, 4)).join(" / ")}</td>
                  <td>{fixed(m.score, 4)}</td>
                  <td>${m.cost.toExponential(3)}</td>
                  <td>{fixed(m.decompose_rate, 2)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scrollable>
      </section>
      {lambdas.length > 0 && (
        <section className="panel" aria-label="Split rate by λ">
          <h2>How often each decider splits, by λ</h2>
          <p className="muted small">Same-domain / mixed-domain composites; λ prices cost (0: accuracy only).</p>
          <Scrollable className="table-wrap" label="Split rate by λ">
            <table data-testid="composite-rates">
              <thead>
                <tr>
                  <th scope="col">Method</th>
                  {lambdas.map((lam) => (
                    <th scope="col" key={lam}>
                      λ={lam}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {order
                  .filter((name) => name in summary.rates)
                  .map((name) => [name, summary.rates[name]] as const)
                  .map(([name, byLam]) => (
                    <tr key={name} data-method={name}>
                      <th scope="row">{name}</th>
                      {lambdas.map((lam) => (
                        <td key={lam}>{(byLam[lam] ?? []).map((r) => fixed(r, 2)).join(" / ")}</td>
                      ))}
                    </tr>
                  ))}
              </tbody>
            </table>
          </Scrollable>
          {Object.keys(summary.decisions).length > 0 && (
            <p className="small" data-testid="composite-decisions">
              The learned policy&apos;s decisions on the test composites take the option worth more under its own
              routes:{" "}
              {Object.entries(summary.decisions)
                .map(([lam, share]) => `${fixed(share, 2)} at λ=${lam}`)
                .join(", ")}
              .
            </p>
          )}
        </section>
      )}
      {penalties.length > 1 && (
        <section className="panel" aria-label="Sensitivity to the interference penalty">
          <h2>Sensitivity to the interference penalty</h2>
          <Scrollable className="table-wrap" label="Sensitivity">
            <table data-testid="composite-sensitivity">
              <thead>
                <tr>
                  <th scope="col">Penalty</th>
                  {methods.map(([name]) => (
                    <th scope="col" key={name}>
                      {name}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {penalties.map((penalty) => (
                  <tr key={penalty}>
                    <th scope="row">{penalty}</th>
                    {methods.map(([name]) => (
                      <td key={name}>{fixed(summary.sensitivity[penalty][name] ?? null, 4)}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </Scrollable>
        </section>
      )}
    </>
  );
}
