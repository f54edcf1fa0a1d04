// The runs as a table: a row opens its run (click, or Enter), a checkbox (or Space) picks it
// to compare; the arrow keys move between rows.
import type { KeyboardEvent, MouseEvent } from "react";
import { Link, useNavigate } from "react-router";

import type { Run } from "../../api/types";
import { Scrollable } from "../../components/Scrollable";
import { seconds, tokens, usd, when } from "../../lib/format";

interface Props {
  runs: Run[];
  busy: boolean;
  everyone: boolean;
  picked: number[];
  toggle: (id: number) => void;
}

export function RunsTable({ runs, busy, everyone, picked, toggle }: Props) {
  const navigate = useNavigate();
  const open = (id: number) => void navigate(`/runs/${id}`);
  const onRowClick = (event: MouseEvent<HTMLTableRowElement>, id: number) => {
    if ((event.target as HTMLElement).closest("a, button, input, label")) return;
    open(id);
  };
  const onRowKey = (event: KeyboardEvent<HTMLTableRowElement>, id: number) => {
    if (event.target !== event.currentTarget) return;
    if (event.key === "Enter") {
      event.preventDefault();
      open(id);
    } else if (event.key === " ") {
      event.preventDefault();
      toggle(id);
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const row = event.currentTarget;
      const next = event.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling;
      if (next instanceof HTMLElement) next.focus();
    }
  };

  return (
    <Scrollable className="table-wrap runs-table" aria-busy={busy} label="Runs">
      <table>
        <caption className="sr-only">Runs, newest first. Enter opens a run; Space picks it to compare.</caption>
        <thead>
          <tr>
            <th scope="col" className="runs-pick">
              <span className="sr-only">Compare</span>
            </th>
            <th scope="col">Run</th>
            <th scope="col">Task</th>
            <th scope="col">Status</th>
            <th scope="col" className="runs-mid">
              Policy
            </th>
            {everyone && (
              <th scope="col" className="runs-wide">
                Owner
              </th>
            )}
            <th scope="col" className="num runs-wide">
              Tokens
            </th>
            <th scope="col" className="num">
              Cost
            </th>
            <th scope="col" className="num runs-wide">
              Latency
            </th>
            <th scope="col" className="runs-wide">
              Created
            </th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => {
            const isPicked = picked.includes(run.id);
            return (
              <tr
                key={run.id}
                className={`clickable${isPicked ? " picked" : ""}`}
                tabIndex={0}
                aria-label={`Run ${run.id}: ${run.status}, ${run.task_text.slice(0, 60)}`}
                onClick={(event) => onRowClick(event, run.id)}
                onKeyDown={(event) => onRowKey(event, run.id)}
              >
                <td className="runs-pick">
                  <input
                    type="checkbox"
                    aria-label={`Pick run ${run.id} to compare`}
                    checked={isPicked}
                    disabled={!isPicked && picked.length >= 2}
                    onChange={() => toggle(run.id)}
                  />
                </td>
                <td className="mono">
                  <Link to={`/runs/${run.id}`} tabIndex={-1}>
                    #{run.id}
                  </Link>
                </td>
                <td className="runs-task" title={run.task_text}>
                  <span className="muted mono small" title={`task #${run.task_id}: runs of one task can be compared`}>
                    task #{run.task_id}
                  </span>{" "}
                  {run.task_text}
                </td>
                <td>
                  <span className={`status ${run.status}`}>{run.status}</span>
                </td>
                <td className="runs-mid">{run.policy}</td>
                {everyone && <td className="runs-wide">{run.owner}</td>}
                <td className="num runs-wide">{tokens(run.tokens_in + run.tokens_out)}</td>
                <td className="num">{usd(run.cost_usd)}</td>
                <td className="num runs-wide">{seconds(run.latency_s)}</td>
                <td className="small runs-wide">{when(run.created_at)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </Scrollable>
  );
}
