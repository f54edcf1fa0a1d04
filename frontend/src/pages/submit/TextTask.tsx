// A written task: its text, an optional gold answer and checker, and whether it may be split.
import type { Options } from "../../api/types";

export interface Written {
  text: string;
  gold: string;
  checker: string;
  decomposable: boolean;
}

export const NO_TEXT: Written = { text: "", gold: "", checker: "", decomposable: false };

interface Props {
  task: Written;
  change: (patch: Partial<Written>) => void;
  checkers: Options["checkers"];
}

export function TextTask({ task, change, checkers }: Props) {
  return (
    <>
      <label>
        Task
        <textarea
          value={task.text}
          onChange={(e) => change({ text: e.target.value })}
          placeholder="What is 6*7? — or anything the pool's models should solve"
        />
      </label>
      <div className="row">
        <label className="grow">
          Gold answer <span className="muted small">(optional, to verify the answer)</span>
          <input value={task.gold} onChange={(e) => change({ gold: e.target.value })} />
        </label>
        <label>
          Checker
          <select value={task.checker} onChange={(e) => change({ checker: e.target.value })}>
            <option value="">none</option>
            {checkers.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
      </div>
      <label className="inline">
        <input
          type="checkbox"
          checked={task.decomposable}
          onChange={(e) => change({ decomposable: e.target.checked })}
        />{" "}
        Let the policy split it into subtasks
      </label>
    </>
  );
}
