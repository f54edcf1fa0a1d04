// The run's final answer, its verification and its totals, once it has ended.
import { Scrollable } from "../../components/Scrollable";
import { plain, seconds, tokens, usd, when } from "../../lib/format";
import type { LiveTree } from "../../lib/liveTree";

export function Verification({ value }: { value: Record<string, unknown> }) {
  const entries = Object.entries(value ?? {});
  if (entries.length === 0) return <p className="muted small">No verification.</p>;
  const correct = value.correct;
  return (
    <div className="verification">
      {typeof correct === "boolean" && (
        <span className={`status ${correct ? "succeeded" : "failed"}`}>{correct ? "correct" : "not correct"}</span>
      )}
      <dl className="kv">
        {entries
          .filter(([k]) => k !== "correct")
          .map(([k, v]) => (
            <div key={k}>
              <dt>{k.replace(/_/g, " ")}</dt>
              <dd>{plain(v)}</dd>
            </div>
          ))}
      </dl>
    </div>
  );
}

export function FinalAnswer({ tree }: { tree: LiveTree }) {
  const run = tree.run;
  return (
    <section className="panel liverun-final" aria-label="Final answer">
      <div className="row">
        <h2>Final answer</h2>
        <span className={`status ${run.status}`}>{run.status}</span>
        {run.end_reason && <span className="muted small">{run.end_reason}</span>}
      </div>
      <Scrollable as="pre" data-testid="final-answer" label="Final answer">
        {run.final_answer || "(no answer)"}
      </Scrollable>
      <div className="grid2">
        <div>
          <h3>Verification</h3>
          <Verification value={run.verification} />
        </div>
        <div>
          <h3>Totals</h3>
          <dl className="kv">
            <div>
              <dt>Tokens in</dt>
              <dd>{tokens(run.tokens_in)}</dd>
            </div>
            <div>
              <dt>Tokens out</dt>
              <dd>{tokens(run.tokens_out)}</dd>
            </div>
            <div>
              <dt>Cost</dt>
              <dd>{usd(run.cost_usd)}</dd>
            </div>
            <div>
              <dt>Latency (sum of calls)</dt>
              <dd>{seconds(run.latency_s)}</dd>
            </div>
            <div>
              <dt>Finished</dt>
              <dd>{when(run.finished_at)}</dd>
            </div>
          </dl>
        </div>
      </div>
    </section>
  );
}
