// Two runs side by side: what they cost, what they answered, and their trees.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useSearchParams } from "react-router";

import { api, mayHeal } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Pair, Run, Tree } from "../api/types";
import { atLeast, useMe } from "../auth";
import { RunTreeView } from "../components/RunTree";
import { Scrollable } from "../components/Scrollable";
import { Empty, ErrorText, Loading } from "../components/States";
import { RUN_ENDED } from "../lib/eventTree";
import { plain } from "../lib/format";
import { Summary, verdictOf } from "./compare/Summary";
import "./Runs.css";

const ENDED = new Set(RUN_ENDED);

function runId(text: string | null): number | null {
  return text && /^\d+$/.test(text) ? Number(text) : null;
}

function useTree(id: number | null) {
  return useQuery({
    queryKey: keys.runs.tree(id ?? 0),
    queryFn: () => api<Tree>(`/api/runs/${id}/tree`),
    enabled: id !== null,
    // A run still going: look again until it ends (and after a failed look that may heal).
    refetchInterval: (q) =>
      (q.state.data && !ENDED.has(q.state.data.run.status)) || mayHeal(q.state.error) ? 3000 : false,
  });
}

export default function ComparePage() {
  const [params] = useSearchParams();
  const a = runId(params.get("a"));
  const b = runId(params.get("b"));
  const treeA = useTree(a);
  const treeB = useTree(b);

  const back = (
    <Link to="/runs" className="small">
      ← Runs
    </Link>
  );

  if (a === null || b === null) {
    return (
      <div className="stack compare-page">
        {back}
        <h1>Compare runs</h1>
        <Empty title="Pick two runs to compare">
          <p>
            On the <Link to="/runs">Runs</Link> page, tick two runs (best: two runs of the same task) and press Compare.
          </p>
        </Empty>
      </div>
    );
  }

  const runA = treeA.data?.run;
  const runB = treeB.data?.run;

  return (
    <div className="stack compare-page">
      {back}
      <h1>
        Run #{a} vs run #{b}
      </h1>
      {a === b && <p className="compare-note">These are the same run twice.</p>}
      {runA && runB && runA.task_id !== runB.task_id && (
        <p className="compare-note" role="note">
          These runs are of different tasks (#{runA.task_id} and #{runB.task_id}). Comparing is meant for two runs of
          the same task; the numbers below are not like for like, and they cannot be paired for labeling. To get a
          second run of one task, use “Run again” on its run page.
        </p>
      )}
      {(treeA.isPending || treeB.isPending) && <Loading what="Loading the runs" />}
      {treeA.isError && <SideError id={a} error={treeA.error} />}
      {treeB.isError && <SideError id={b} error={treeB.error} />}
      {runA && runB && <Summary a={runA} b={runB} />}
      {runA && runB && <PairAction a={runA} b={runB} />}
      <div className="compare-sides">
        {treeA.data && <Side label="A" tree={treeA.data} showTask={!runB || runB.task_id !== treeA.data.run.task_id} />}
        {treeB.data && <Side label="B" tree={treeB.data} showTask={!runA || runA.task_id !== treeB.data.run.task_id} />}
      </div>
    </div>
  );
}

function SideError({ id, error }: { id: number; error: unknown }) {
  return (
    <div>
      <p className="small">Run #{id}:</p>
      <ErrorText error={error} />
    </div>
  );
}

/** Researchers: make the two runs a preference pair for the labeling queue. */
function PairAction({ a, b }: { a: Run; b: Run }) {
  const me = useMe();
  const client = useQueryClient();
  const pair = useMutation({
    mutationFn: () =>
      api<Pair>("/api/preferences/pairs", {
        method: "POST",
        body: { run_a_id: a.id, run_b_id: b.id, source: "human", metadata: {} },
      }),
    onSuccess: () => void client.invalidateQueries({ queryKey: keys.preferences.all }),
  });
  if (!atLeast(me, "researcher") || a.id === b.id || a.task_id !== b.task_id) return null;
  const ready = ENDED.has(a.status) && ENDED.has(b.status);
  return (
    <div className="row">
      <button type="button" onClick={() => pair.mutate()} disabled={!ready || pair.isPending || pair.isSuccess}>
        {pair.isPending ? "Pairing…" : "Pair for labeling"}
      </button>
      {!ready && <span className="muted small">Both runs must have ended first.</span>}
      {pair.isSuccess && (
        <span role="status" className="small">
          ✓ Pair #{pair.data.id} made; labelers will find it in the <Link to="/label">labeling queue</Link>.
        </span>
      )}
      {pair.isError && <ErrorText error={pair.error} />}
    </div>
  );
}

function Side({ label, tree, showTask }: { label: string; tree: Tree; showTask: boolean }) {
  const [selected, setSelected] = useState<string | null>(null);
  const run = tree.run;
  const extra = Object.entries(run.verification).filter(([key]) => !["correct", "score"].includes(key));
  return (
    <article className="panel stack compare-side" aria-label={`Run ${label}: #${run.id}`}>
      <div className="row">
        <h2>
          {label}: <Link to={`/runs/${run.id}`}>run #{run.id}</Link>
        </h2>
        <span className={`status ${run.status}`}>{run.status}</span>
        <span className="badge">{run.policy}</span>
      </div>
      {showTask && (
        <div>
          <h3>Task #{run.task_id}</h3>
          <Scrollable as="pre" className="compare-task" label={`Task of run ${label}`}>
            {run.task_text}
          </Scrollable>
        </div>
      )}
      <div>
        <h3>Answer</h3>
        {run.final_answer ? (
          <Scrollable as="pre" className="compare-answer" label={`Answer of run ${label}`}>
            {run.final_answer}
          </Scrollable>
        ) : (
          <p className="muted">No answer yet.</p>
        )}
      </div>
      <div>
        <h3>Verification</h3>
        <p>{verdictOf(run)}</p>
        {extra.length > 0 && (
          <dl className="compare-verification small">
            {extra.map(([key, value]) => (
              <div key={key}>
                <dt>{key.replaceAll("_", " ")}</dt>
                <dd>{plain(value)}</dd>
              </div>
            ))}
          </dl>
        )}
      </div>
      <div>
        <h3>Tree</h3>
        {tree.nodes.length === 0 ? (
          <p className="muted">No nodes yet.</p>
        ) : (
          <RunTreeView tree={tree} selected={selected} onSelect={setSelected} height={320} />
        )}
      </div>
      <p className="small">
        <Link to={`/runs/${run.id}`}>Open run #{run.id}</Link>
      </p>
    </article>
  );
}
