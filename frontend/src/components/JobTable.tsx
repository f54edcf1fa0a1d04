// Background jobs (training jobs, evaluations, collections; studio.models.Job), newest first:
// each one's status, progress and message, the columns its kind adds, and when it was
// created. With `onSelect`, a job's number selects it.
import type { ReactNode } from "react";

import { pct, when } from "../lib/format";
import { Scrollable } from "./Scrollable";
import "./JobTable.css";

/** What every job's answer has (studio.api.jobs.JobOut). */
export interface Job {
  id: number;
  status: string;
  progress: number;
  message: string;
  created_at: string;
}

export interface JobColumn<J> {
  header: string;
  cell: (job: J) => ReactNode;
  className?: string;
}

export function JobProgress({ job, label }: { job: Job; label: string }) {
  return (
    <div className="job-progress" data-testid="job-progress" data-progress={job.progress}>
      <div
        className="progress"
        role="progressbar"
        aria-label={`${label} ${job.id} progress`}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(job.progress * 100)}
      >
        <span style={{ width: `${job.progress * 100}%` }} />
      </div>
      <span className="small">{pct(job.progress, 0)}</span>
    </div>
  );
}

export function JobTable<J extends Job>({
  jobs,
  label,
  noun,
  title = (job) => `#${job.id}`,
  columns = [],
  trailing = [],
  progress = (job) => <JobProgress job={job} label={noun} />,
  selectedId = null,
  onSelect,
}: {
  jobs: J[];
  /** The table's name, said when the keyboard reaches it. */
  label: string;
  /** What one job is called ("Job", "Evaluation", "Collection"): the first column's header. */
  noun: string;
  title?: (job: J) => ReactNode;
  /** Columns after the job's number, before its status. */
  columns?: JobColumn<J>[];
  /** Columns after its message and creation. */
  trailing?: JobColumn<J>[];
  progress?: (job: J) => ReactNode;
  selectedId?: number | null;
  onSelect?: (id: number) => void;
}) {
  return (
    <Scrollable className="table-wrap" label={label}>
      <table className="job-table">
        <thead>
          <tr>
            <th scope="col">{noun}</th>
            {columns.map((column) => (
              <th key={column.header} scope="col">
                {column.header}
              </th>
            ))}
            <th scope="col">Status</th>
            <th scope="col">Progress</th>
            <th scope="col">Message</th>
            <th scope="col" className="created">
              Created
            </th>
            {trailing.map((column) => (
              <th key={column.header} scope="col">
                {column.header}
              </th>
            ))}
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
                {onSelect ? (
                  <button
                    type="button"
                    className="link"
                    aria-pressed={job.id === selectedId}
                    onClick={() => onSelect(job.id)}
                  >
                    {title(job)}
                  </button>
                ) : (
                  title(job)
                )}
              </th>
              {columns.map((column) => (
                <td key={column.header} className={column.className}>
                  {column.cell(job)}
                </td>
              ))}
              <td>
                <span className={`status ${job.status}`} data-testid="job-status">
                  {job.status}
                </span>
              </td>
              <td>{progress(job)}</td>
              <td className={job.status === "failed" ? "job-message failed" : "job-message"} data-testid="job-message">
                {job.message || "–"}
              </td>
              <td className="small created">{when(job.created_at)}</td>
              {trailing.map((column) => (
                <td key={column.header} className={column.className}>
                  {column.cell(job)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </Scrollable>
  );
}
