// Offline evaluations: start one (quick or full), watch it run, then read its Pareto plot,
// metrics table and per-domain breakdown. Every number is from the evaluation's report.
import { useQuery } from "@tanstack/react-query";
import { useSearchParams } from "react-router";

import { fetchEvery, mayHeal } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Evaluation } from "../api/types";
import { ACTIVE } from "../components/JobForm";
import { Empty, ErrorText, Loading } from "../components/States";
import { when } from "../lib/format";
import { EvaluationView, presetOf } from "./evaluation/EvaluationView";
import { StartForm } from "./evaluation/StartForm";
import "./Evaluation.css";

// The shown evaluation's progress is streamed (useEvaluationStream); the list looks again
// now and then while one runs, to catch the end of the others, and after a failed look
// that may heal (a busy server).
const LIST_POLL_MS = 5000;
const HEAL_MS = 2000;

export default function EvaluationPage() {
  const [params, setParams] = useSearchParams();
  const list = useQuery({
    queryKey: keys.evaluations.list,
    queryFn: ({ signal }) => fetchEvery<Evaluation>("/api/evaluations", {}, signal),
    refetchInterval: (q) =>
      mayHeal(q.state.error) ? HEAL_MS : q.state.data?.items.some((e) => ACTIVE.has(e.status)) ? LIST_POLL_MS : false,
  });
  const chosenId = Number(params.get("id")) || list.data?.items[0]?.id || null;
  const select = (id: number) => setParams({ id: String(id) });

  return (
    <div className="evaluation-page stack">
      <div className="row">
        <h1>Evaluation</h1>
        <span className="spacer" />
        {list.data && list.data.items.length > 0 && (
          <label className="inline">
            Evaluation&nbsp;
            <select value={chosenId ?? ""} onChange={(e) => select(Number(e.target.value))}>
              {list.data.items.map((e) => (
                <option key={e.id} value={e.id}>
                  #{e.id} · {presetOf(e)} · {e.status} · {when(e.created_at)}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      <StartForm onStarted={select} />
      {list.isPending && <Loading what="Loading evaluations" />}
      {list.isError && <ErrorText error={list.error} />}
      {list.data && list.data.items.length === 0 && (
        <Empty title="No evaluation yet">
          <p>
            An evaluation fits the learned policy and every baseline on recorded outcomes, then scores them on the same
            held-out items. Start a quick one above (a subset of LLMRouter, under a minute) or a full one (several
            minutes).
          </p>
        </Empty>
      )}
      {chosenId !== null && <EvaluationView id={chosenId} />}
    </div>
  );
}
