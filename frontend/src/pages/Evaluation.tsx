// Offline evaluations: start one (quick or full), choose one in the table of every
// evaluation, watch it run, then read its Pareto plot, metrics table and per-domain
// breakdown. Every number is from the evaluation's report.
import { useQuery } from "@tanstack/react-query";
import { useSearchParams } from "react-router";

import { fetchEvery, mayHeal } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Evaluation } from "../api/types";
import { ACTIVE } from "../components/JobForm";
import { JobTable } from "../components/JobTable";
import { Empty, ErrorText, Loading } from "../components/States";
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
      <h1>Evaluation</h1>
      <StartForm onStarted={select} />
      <section className="panel" aria-label="Evaluations">
        <h2>Evaluations</h2>
        {list.isPending && <Loading what="Loading evaluations" />}
        {list.isError && <ErrorText error={list.error} />}
        {list.data && list.data.items.length === 0 && (
          <Empty title="No evaluation yet">
            <p>
              An evaluation fits the learned policy and every baseline on recorded outcomes, then scores them on the
              same held-out items. Start a quick one above (a subset of LLMRouter, under a minute) or a full one
              (several minutes).
            </p>
          </Empty>
        )}
        {list.data && list.data.items.length > 0 && (
          <JobTable
            jobs={list.data.items}
            label="Evaluations table"
            noun="Evaluation"
            columns={[{ header: "Preset", cell: presetOf }]}
            selectedId={chosenId}
            onSelect={select}
          />
        )}
      </section>
      {chosenId !== null && <EvaluationView id={chosenId} />}
    </div>
  );
}
