// The training jobs: status, progress and stage of each; a job's number selects it.
import type { TrainingJob } from "../../api/types";
import { Scrollable } from "../../components/Scrollable";
import { pct, when } from "../../lib/format";
import { KIND_LABEL } from "./config";

export function JobTable({
  jobs,
  selectedId,
  onSelect,
}: {
  jobs: TrainingJob[];
  selectedId: number | null;
  onSelect: (id: number) => void;
}) {
  return (
    <Scrollable className="table-wrap" label="Training jobs">
      <table className="jobs-table">
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Kind</th>
            <th scope="col">Status</th>
            <th scope="col">Progress</th>
            <th scope="col">Stage / message</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => (
            <tr
              key={job.id}
              data-testid="job-row"
              data-job-id={job.id}
              data-status={job.status}
              className={job.id === selectedId ? "selected" : undefined}
            >
              <th scope="row">
                <button
                  type="button"
                  className="link"
                  aria-pressed={job.id === selectedId}
                  onClick={() => onSelect(job.id)}
                >
                  #{job.id}
                </button>
              </th>
              <td>{KIND_LABEL[job.kind] ?? job.kind}</td>
              <td>
                <span className={`status ${job.status}`}>{job.status}</span>
              </td>
              <td>
                <div className="job-progress" data-testid="job-progress" data-progress={job.progress}>
                  <div
                    className="progress"
                    role="progressbar"
                    aria-label={`Job ${job.id} progress`}
                    aria-valuemin={0}
                    aria-valuemax={100}
                    aria-valuenow={Math.round(job.progress * 100)}
                  >
                    <span style={{ width: `${job.progress * 100}%` }} />
                  </div>
                  <span className="small">{pct(job.progress, 0)}</span>
                </div>
              </td>
              <td className={job.status === "failed" ? "job-message failed" : "job-message"}>{job.message || "–"}</td>
              <td className="small">{when(job.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scrollable>
  );
}
