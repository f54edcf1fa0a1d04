// One pair of runs to judge: the task, the two runs side by side (the order the API chose),
// and the verdict, picked with A / B / T / S and sent with Enter.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";

import { ApiError, api } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { QueueItem, Tree } from "../../api/types";
import { RunTreeView } from "../../components/RunTree";
import { Scrollable } from "../../components/Scrollable";
import { ErrorText, Loading } from "../../components/States";
import { seconds, tokens, usd } from "../../lib/format";
import { useHotkeys } from "../../lib/hotkeys";
import { CHOICES, SAID, verdictFor, type Choice, type Verdict } from "./verdicts";

const MAX_SECONDS = 86_400;

interface PairViewProps {
  item: QueueItem;
  onLabeled: (item: QueueItem, choice: Choice) => void;
}

export function PairView({ item, onLabeled }: PairViewProps) {
  const [choice, setChoice] = useState<Choice | null>(null);
  const [hint, setHint] = useState("");
  const shownAt = useRef(0);
  const sending = useRef(false);
  const submitRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    shownAt.current = Date.now();
  }, []);

  // The API picks the order (random-looking, fixed per pair and labeler): no second shuffle here.
  const left = item.swap ? item.run_b : item.run_a;
  const right = item.swap ? item.run_a : item.run_b;

  const label = useMutation({
    mutationFn: (verdict: Verdict) =>
      api(`/api/preferences/pairs/${item.pair_id}/labels`, {
        method: "POST",
        body: { verdict, seconds_spent: Math.min(MAX_SECONDS, Math.round((Date.now() - shownAt.current) / 100) / 10) },
      }),
  });

  const pick = (next: Choice) => {
    setChoice(next);
    setHint("");
  };

  const submit = () => {
    if (sending.current) return;
    if (!choice) {
      setHint("Pick a verdict first: A, B, T or S.");
      return;
    }
    sending.current = true;
    const picked = choice;
    label.mutate(verdictFor(picked, item.swap), {
      onSuccess: () => onLabeled(item, picked),
      onSettled: () => {
        sending.current = false;
      },
    });
  };

  useHotkeys({ A: () => pick("A"), B: () => pick("B"), T: () => pick("T"), S: () => pick("S"), Enter: submit });

  return (
    <section className="stack" data-testid="label-pair" data-pair-id={item.pair_id} aria-label={`Pair ${item.pair_id}`}>
      <TaskCard item={item} />
      <div className="label-sides">
        <Side name="Left" hotkey="A" run={left} picked={choice === "A"} />
        <Side name="Right" hotkey="B" run={right} picked={choice === "B"} />
      </div>
      <div className="label-actions panel" role="group" aria-label="Verdict">
        <div className="label-verdicts">
          {CHOICES.map((c) => (
            <button
              key={c.key}
              type="button"
              data-testid={`verdict-${c.key}`}
              aria-pressed={choice === c.key}
              className={`verdict verdict-${c.key}${choice === c.key ? " picked" : ""}`}
              onClick={() => {
                pick(c.key);
                // Enter now submits: the focused Submit button takes it.
                submitRef.current?.focus();
              }}
            >
              <kbd>{c.key}</kbd> <span className="verdict-long">{c.label}</span>
              <span className="verdict-short">{c.short}</span>
            </button>
          ))}
        </div>
        <div className="row label-submit">
          <button ref={submitRef} type="button" className="primary" disabled={label.isPending} onClick={submit}>
            {label.isPending ? "Saving…" : "Submit"} <kbd>Enter</kbd>
          </button>
          <span className="muted small label-hint" aria-live="polite">
            {hint ||
              (choice ? `Your verdict: ${SAID[choice]}. Enter to submit.` : "Pick A, B, T or S, then press Enter.")}
          </span>
        </div>
        {label.isError && <ErrorText error={label.error} />}
      </div>
    </section>
  );
}

function TaskCard({ item }: { item: QueueItem }) {
  const others = item.label_count;
  return (
    <div className="panel stack label-task">
      <div className="row">
        <h2 className="label-h">Task</h2>
        {item.task.benchmark && <span className="badge">{item.task.benchmark}</span>}
        {item.task.domain && <span className="badge">{item.task.domain}</span>}
        <span className="spacer" />
        <span className="muted small">
          pair #{item.pair_id} · {item.source.replaceAll("_", " ")}
          {others > 0 && ` · ${others} label${others === 1 ? "" : "s"} by others`}
        </span>
      </div>
      <Scrollable as="pre" className="label-task-text" label="Task">
        {item.task.text}
      </Scrollable>
    </div>
  );
}

type SideRun = QueueItem["run_a"];

function Side({ name, hotkey, run, picked }: { name: string; hotkey: string; run: SideRun; picked: boolean }) {
  return (
    <article
      className={`panel stack label-side${picked ? " picked" : ""}`}
      aria-label={`${name} run`}
      data-side={name.toLowerCase()}
      data-run-id={run.id}
    >
      <div className="row">
        <h2 className="label-h">
          <kbd>{hotkey}</kbd> {name}
        </h2>
        <span className={`status ${run.status}`}>{run.status}</span>
        {picked && <span className="badge label-pick">your pick</span>}
      </div>
      <div>
        <h3 className="label-h3">Final answer</h3>
        {run.final_answer ? (
          <Scrollable as="pre" className="label-answer" label={`${name} answer`}>
            {run.final_answer}
          </Scrollable>
        ) : (
          <p className="muted">No answer.</p>
        )}
      </div>
      <dl className="label-metrics">
        <div>
          <dt>Tokens</dt>
          <dd>
            {tokens(run.tokens_in)} in · {tokens(run.tokens_out)} out
          </dd>
        </div>
        <div>
          <dt>Cost</dt>
          <dd>{usd(run.cost_usd)}</dd>
        </div>
        <div>
          <dt>Latency</dt>
          <dd>{seconds(run.latency_s)}</dd>
        </div>
      </dl>
      <div>
        <h3 className="label-h3">Tree</h3>
        <SideTree run={run} />
      </div>
    </article>
  );
}

interface PlanNode {
  key: string;
  model: string;
  primitive: string;
  kind?: string;
  depends_on?: string[];
}

/** The run's tree; a labeler may not see runs of others, so then the plan from the queue. */
function SideTree({ run }: { run: SideRun }) {
  const [selected, setSelected] = useState<string | null>(null);
  const tree = useQuery({ queryKey: keys.runs.tree(run.id), queryFn: () => api<Tree>(`/api/runs/${run.id}/tree`) });
  if (tree.isPending) return <Loading what="Loading the tree" />;
  if (tree.data) return <RunTreeView tree={tree.data} selected={selected} onSelect={setSelected} height={320} />;
  const hidden = tree.error instanceof ApiError && (tree.error.status === 404 || tree.error.status === 403);
  const nodes = (run.plan?.nodes as PlanNode[] | undefined) ?? [];
  if (!hidden) return <ErrorText error={tree.error} />;
  if (nodes.length === 0) return <p className="muted">This run has no stored tree or plan to show.</p>;
  return (
    <div>
      <ol className="label-plan">
        {nodes.map((node) => (
          <li key={node.key}>
            <span className="mono">{node.key}</span> <span className="badge">{node.kind ?? "node"}</span> {node.model} ·{" "}
            {node.primitive}
            {node.depends_on && node.depends_on.length > 0 && (
              <span className="muted small"> (after {node.depends_on.join(", ")})</span>
            )}
          </li>
        ))}
      </ol>
      <p className="muted small">The run&apos;s plan (no tree is stored for it).</p>
    </div>
  );
}
