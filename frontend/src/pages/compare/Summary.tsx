// Two runs' numbers side by side: the lower tokens, cost and latency marked.
import type { ReactNode } from "react";
import { Link } from "react-router";

import type { Run } from "../../api/types";
import { Scrollable } from "../../components/Scrollable";
import { seconds, tokens, usd, when } from "../../lib/format";

export function verdictOf(run: Run): string {
  const v = run.verification as { correct?: unknown; score?: unknown; method?: unknown };
  if (typeof v.correct !== "boolean") return "not verified";
  const score = typeof v.score === "number" ? ` (score ${Number(v.score.toFixed(3))})` : "";
  return `${v.correct ? "✓ correct" : "✗ wrong"}${score}`;
}

/** Marks the lower of two numbers, the better one for cost, tokens and time. */
function Lower({ mine, theirs, word }: { mine: number; theirs: number; word: string }) {
  if (!(mine < theirs)) return null;
  return <span className="compare-better">{word}</span>;
}

export function Summary({ a, b }: { a: Run; b: Run }) {
  const both = a.status === "succeeded" && b.status === "succeeded";
  const rows: { name: string; a: ReactNode; b: ReactNode }[] = [
    { name: "Task", a: <TaskCell run={a} />, b: <TaskCell run={b} /> },
    { name: "Policy", a: a.policy, b: b.policy },
    {
      name: "Status",
      a: <StatusCell run={a} />,
      b: <StatusCell run={b} />,
    },
    { name: "Verification", a: verdictOf(a), b: verdictOf(b) },
    {
      name: "Tokens (in / out)",
      a: (
        <>
          {tokens(a.tokens_in)} / {tokens(a.tokens_out)}
          {both && <Lower mine={a.tokens_in + a.tokens_out} theirs={b.tokens_in + b.tokens_out} word="fewer" />}
        </>
      ),
      b: (
        <>
          {tokens(b.tokens_in)} / {tokens(b.tokens_out)}
          {both && <Lower mine={b.tokens_in + b.tokens_out} theirs={a.tokens_in + a.tokens_out} word="fewer" />}
        </>
      ),
    },
    {
      name: "Cost",
      a: (
        <>
          {usd(a.cost_usd)}
          {both && <Lower mine={a.cost_usd} theirs={b.cost_usd} word="cheaper" />}
        </>
      ),
      b: (
        <>
          {usd(b.cost_usd)}
          {both && <Lower mine={b.cost_usd} theirs={a.cost_usd} word="cheaper" />}
        </>
      ),
    },
    {
      name: "Latency",
      a: (
        <>
          {seconds(a.latency_s)}
          {both && <Lower mine={a.latency_s} theirs={b.latency_s} word="faster" />}
        </>
      ),
      b: (
        <>
          {seconds(b.latency_s)}
          {both && <Lower mine={b.latency_s} theirs={a.latency_s} word="faster" />}
        </>
      ),
    },
    {
      name: "Cost preference λ",
      a: a.cost_preference ?? "–",
      b: b.cost_preference ?? "–",
    },
    { name: "Best of", a: a.best_of, b: b.best_of },
    { name: "Owner", a: a.owner, b: b.owner },
    { name: "Started", a: when(a.started_at ?? a.created_at), b: when(b.started_at ?? b.created_at) },
  ];
  return (
    <Scrollable className="table-wrap compare-table" label="The two runs">
      <table>
        <thead>
          <tr>
            <th scope="col">
              <span className="sr-only">Field</span>
            </th>
            <th scope="col">
              A: <Link to={`/runs/${a.id}`}>run #{a.id}</Link>
            </th>
            <th scope="col">
              B: <Link to={`/runs/${b.id}`}>run #{b.id}</Link>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.name}>
              <th scope="row">{row.name}</th>
              <td>{row.a}</td>
              <td>{row.b}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scrollable>
  );
}

function TaskCell({ run }: { run: Run }) {
  return (
    <span title={run.task_text}>
      #{run.task_id}{" "}
      <span className="muted">{run.task_text.length > 80 ? `${run.task_text.slice(0, 80)}…` : run.task_text}</span>
    </span>
  );
}

function StatusCell({ run }: { run: Run }) {
  return (
    <>
      <span className={`status ${run.status}`}>{run.status}</span>
      {run.end_reason && <span className="muted small"> {run.end_reason.replaceAll("_", " ")}</span>}
    </>
  );
}
