// The labeling queue: one pair of runs at a time, the better one picked with A / B / T / S
// and Enter. Researchers also get the labelers' agreement, the JSONL export and pairing.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Link, useSearchParams } from "react-router";

import { ApiError, api, query, type Page } from "../api/client";
import type { Agreement, Pair, Queue, QueueItem, Tree } from "../api/types";
import { atLeast, useMe } from "../auth";
import { RunTreeView } from "../components/RunTree";
import { Empty, ErrorText, Loading } from "../components/States";
import { useHotkeys } from "../lib/hotkeys";
import { seconds, tokens, usd, when } from "../lib/format";
import "./Label.css";

const QUEUE_LIMIT = 20;
const SOURCES = ["human", "correct_over_incorrect", "cheaper_correct", "specialized_over_base", "node_level"] as const;

type Tab = "queue" | "agreement" | "export";

export default function LabelPage() {
  const me = useMe();
  const researcher = atLeast(me, "researcher");
  const [params, setParams] = useSearchParams();
  const asked = params.get("tab") as Tab | null;
  const tab: Tab = researcher && (asked === "agreement" || asked === "export") ? asked : "queue";
  const tabs: { id: Tab; label: string }[] = [
    { id: "queue", label: "Queue" },
    { id: "agreement", label: "Agreement" },
    { id: "export", label: "Pairs & export" },
  ];
  const idBase = useId();

  const choose = (next: Tab) => {
    const copy = new URLSearchParams(params);
    if (next === "queue") copy.delete("tab");
    else copy.set("tab", next);
    setParams(copy);
  };

  return (
    <div className="stack label-page">
      <h1>Label</h1>
      {researcher && (
        <div
          className="label-tabs"
          role="tablist"
          aria-label="Labeling"
          onKeyDown={(event) => {
            if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
            const index = tabs.findIndex((t) => t.id === tab);
            const next = tabs[(index + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
            choose(next.id);
            document.getElementById(`${idBase}-tab-${next.id}`)?.focus();
          }}
        >
          {tabs.map((t) => (
            <button
              key={t.id}
              id={`${idBase}-tab-${t.id}`}
              type="button"
              role="tab"
              aria-selected={tab === t.id}
              aria-controls={`${idBase}-panel`}
              tabIndex={tab === t.id ? 0 : -1}
              className={tab === t.id ? "active" : ""}
              onClick={() => choose(t.id)}
            >
              {t.label}
            </button>
          ))}
        </div>
      )}
      <div id={`${idBase}-panel`} role={researcher ? "tabpanel" : undefined} aria-labelledby={researcher ? `${idBase}-tab-${tab}` : undefined}>
        {tab === "queue" && <LabelQueue />}
        {tab === "agreement" && <AgreementView />}
        {tab === "export" && <PairsAndExport />}
      </div>
    </div>
  );
}

// --- The queue --------------------------------------------------------------------------

/** What the labeler picked, by the sides as shown: A = left, B = right. */
type Choice = "A" | "B" | "T" | "S";
type Verdict = "a" | "b" | "tie" | "skip";

/**
 * The stored verdict for a displayed choice. `swap` (from the API) means run B is shown on
 * the left, so "left is better" names run B. Verdicts always name the pair's own A and B.
 */
export function verdictFor(choice: Choice, swap: boolean): Verdict {
  if (choice === "T") return "tie";
  if (choice === "S") return "skip";
  const left: Verdict = swap ? "b" : "a";
  const right: Verdict = swap ? "a" : "b";
  return choice === "A" ? left : right;
}

const CHOICES: { key: Choice; label: string; short: string }[] = [
  { key: "A", label: "Left is better", short: "Left" },
  { key: "B", label: "Right is better", short: "Right" },
  { key: "T", label: "Tie", short: "Tie" },
  { key: "S", label: "Skip", short: "Skip" },
];

const SAID: Record<Choice, string> = {
  A: "left is better",
  B: "right is better",
  T: "a tie",
  S: "skipped",
};

function LabelQueue() {
  const client = useQueryClient();
  const queue = useQuery({
    queryKey: ["preferences", "queue"],
    queryFn: () => api<Queue>(`/api/preferences/queue${query({ limit: QUEUE_LIMIT })}`),
  });
  // Pairs labeled here since the queue was last read: hidden at once, before it is read again.
  const [done, setDone] = useState<number[]>([]);
  const [saved, setSaved] = useState<{ pairId: number; text: string } | null>(null);

  useEffect(() => {
    if (!saved) return;
    const timer = window.setTimeout(() => setSaved(null), 4000);
    return () => window.clearTimeout(timer);
  }, [saved]);

  if (queue.isPending) return <Loading what="Loading the labeling queue" />;
  if (queue.isError) return <ErrorText error={queue.error} />;

  const served = queue.data.items;
  const items = served.filter((item) => !done.includes(item.pair_id));
  const item = items[0];
  const { total } = queue.data.progress;
  // The server's count, plus what was labeled here and is still in the queue it last sent.
  const labeled = Math.min(total, queue.data.progress.labeled + done.filter((id) => served.some((s) => s.pair_id === id)).length);

  const onLabeled = (pairId: number, choice: Choice) => {
    setDone((ids) => [...ids, pairId]);
    setSaved({ pairId, text: `Saved pair #${pairId}: ${SAID[choice]}.` });
    void client.invalidateQueries({ queryKey: ["preferences", "queue"] });
    void client.invalidateQueries({ queryKey: ["preferences", "agreement"] });
  };

  return (
    <div className="stack">
      <Progress labeled={labeled} total={total} />
      {saved && (
        <p className="label-saved" data-testid="label-submitted" role="status">
          ✓ {saved.text}
        </p>
      )}
      {item ? (
        <PairView key={item.pair_id} item={item} onLabeled={onLabeled} />
      ) : queue.isFetching ? (
        <Loading what="Loading the next pairs" />
      ) : (
        <Empty title="Nothing left to label">
          <p>
            {total === 0
              ? "There are no pairs to label yet."
              : `You have labeled all ${total} pair${total === 1 ? "" : "s"} in the queue.`}{" "}
            A pair is two finished runs of the same task. Researchers make pairs by picking two runs
            (Runs → Compare → “Pair for labeling”) or by importing a JSONL file of pairs. New pairs
            show up here.
          </p>
          <button type="button" onClick={() => void queue.refetch()}>
            Check again
          </button>
        </Empty>
      )}
    </div>
  );
}

function Progress({ labeled, total }: { labeled: number; total: number }) {
  const share = total > 0 ? labeled / total : 0;
  return (
    <div className="label-progress row" data-testid="label-progress">
      <span>
        <b>{labeled}</b> of <b>{total}</b> labeled
      </span>
      <div
        className="progress"
        role="progressbar"
        aria-label="Labeling progress"
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={labeled}
      >
        <span style={{ width: `${Math.round(share * 100)}%` }} />
      </div>
    </div>
  );
}

function PairView({ item, onLabeled }: { item: QueueItem; onLabeled: (pairId: number, choice: Choice) => void }) {
  const [choice, setChoice] = useState<Choice | null>(null);
  const [hint, setHint] = useState("");
  const shownAt = useRef(Date.now());
  const sending = useRef(false);
  const submitRef = useRef<HTMLButtonElement>(null);

  // The API picks the order (random-looking, fixed per pair and labeler): no second shuffle here.
  const left = item.swap ? item.run_b : item.run_a;
  const right = item.swap ? item.run_a : item.run_b;

  const label = useMutation({
    mutationFn: (verdict: Verdict) =>
      api(`/api/preferences/pairs/${item.pair_id}/labels`, {
        method: "POST",
        body: { verdict, seconds_spent: Math.min(86_400, Math.round((Date.now() - shownAt.current) / 100) / 10) },
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
      onSuccess: () => onLabeled(item.pair_id, picked),
      onSettled: () => {
        sending.current = false;
      },
    });
  };

  useHotkeys({
    A: () => pick("A"),
    B: () => pick("B"),
    T: () => pick("T"),
    S: () => pick("S"),
    Enter: submit,
  });

  return (
    <section className="stack" data-testid="label-pair" data-pair-id={item.pair_id} aria-label={`Pair ${item.pair_id}`}>
      <div className="panel stack label-task">
        <div className="row">
          <h2 className="label-h">Task</h2>
          {item.task.benchmark && <span className="badge">{item.task.benchmark}</span>}
          {item.task.domain && <span className="badge">{item.task.domain}</span>}
          <span className="spacer" />
          <span className="muted small">
            pair #{item.pair_id} · {item.source.replaceAll("_", " ")}
            {item.label_count > 0 && ` · ${item.label_count} label${item.label_count === 1 ? "" : "s"} by others`}
          </span>
        </div>
        <pre className="label-task-text">{item.task.text}</pre>
      </div>

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
            {hint || (choice ? `Your verdict: ${SAID[choice]}. Enter to submit.` : "Pick A, B, T or S, then press Enter.")}
          </span>
        </div>
        {label.isError && <ErrorText error={label.error} />}
      </div>
    </section>
  );
}

function Side({ name, hotkey, run, picked }: { name: string; hotkey: string; run: QueueItem["run_a"]; picked: boolean }) {
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
        {run.final_answer ? <pre className="label-answer">{run.final_answer}</pre> : <p className="muted">No answer.</p>}
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
function SideTree({ run }: { run: QueueItem["run_a"] }) {
  const [selected, setSelected] = useState<string | null>(null);
  const tree = useQuery({
    queryKey: ["runs", run.id, "tree"],
    queryFn: () => api<Tree>(`/api/runs/${run.id}/tree`),
  });
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
      <p className="muted small">The run's plan (no tree is stored for it).</p>
    </div>
  );
}

// --- Agreement --------------------------------------------------------------------------

/** κ in plain words (Landis & Koch's bands). */
export function kappaReading(kappa: number): string {
  if (kappa < 0) return "worse than chance";
  if (kappa <= 0.2) return "slight agreement";
  if (kappa <= 0.4) return "fair agreement";
  if (kappa <= 0.6) return "moderate agreement";
  if (kappa <= 0.8) return "substantial agreement";
  return "almost perfect agreement";
}

function SourceSelect({ value, onChange, label = "Source" }: { value: string; onChange: (v: string) => void; label?: string }) {
  return (
    <label>
      {label}
      <select value={value} onChange={(event) => onChange(event.target.value)}>
        <option value="">All sources</option>
        {SOURCES.map((source) => (
          <option key={source} value={source}>
            {source.replaceAll("_", " ")}
          </option>
        ))}
      </select>
    </label>
  );
}

function AgreementView() {
  const [source, setSource] = useState("");
  const [overlap, setOverlap] = useState("5");
  const minOverlap = Math.min(100_000, Math.max(1, Math.floor(Number(overlap)) || 1));
  const agreement = useQuery({
    queryKey: ["preferences", "agreement", source, minOverlap],
    queryFn: () => api<Agreement>(`/api/preferences/agreement${query({ source, min_overlap: minOverlap })}`),
  });

  return (
    <div className="stack">
      <p className="muted">
        κ (kappa) is how often labelers agree beyond what chance alone would give: <b>1</b> means they always agree,{" "}
        <b>0</b> no better than chance, below 0 worse than chance. Above 0.6 is usually good enough to train on;
        below 0.4, the task or the instructions are probably unclear. Skips are left out.
      </p>
      <div className="row">
        <SourceSelect value={source} onChange={setSource} />
        <label>
          Minimum shared pairs (Cohen's κ)
          <input type="number" min={1} max={100000} value={overlap} onChange={(event) => setOverlap(event.target.value)} />
        </label>
      </div>
      {agreement.isPending ? (
        <Loading what="Computing agreement" />
      ) : agreement.isError ? (
        <ErrorText error={agreement.error} />
      ) : agreement.data.pairs === 0 ? (
        <Empty title="No agreement to measure yet">
          <p>Agreement needs pairs that at least two people labeled (skips do not count).</p>
        </Empty>
      ) : (
        <AgreementResult data={agreement.data} />
      )}
    </div>
  );
}

function AgreementResult({ data }: { data: Agreement }) {
  return (
    <div className="stack">
      <p>
        <b>{data.pairs}</b> pair{data.pairs === 1 ? "" : "s"} labeled by two or more people, <b>{data.labels}</b> labels
        from <b>{data.labelers}</b> labeler{data.labelers === 1 ? "" : "s"}.
      </p>
      <div className="panel stack">
        <h2 className="label-h">All labelers: Fleiss' κ</h2>
        {data.fleiss ? (
          <p>
            <span className="label-kappa">{data.fleiss.kappa.toFixed(2)}</span> {kappaReading(data.fleiss.kappa)}, over{" "}
            {data.fleiss.pairs} pair{data.fleiss.pairs === 1 ? "" : "s"} with {data.fleiss.raters} labels each.
          </p>
        ) : (
          <p className="muted">Not enough pairs with the same number of labels.</p>
        )}
      </div>
      <div className="panel stack">
        <h2 className="label-h">Two labelers at a time: Cohen's κ</h2>
        {data.cohen.length === 0 ? (
          <p className="muted">
            No two labelers share at least {data.min_overlap} labeled pair{data.min_overlap === 1 ? "" : "s"}. Lower the
            minimum above to see smaller overlaps (fewer shared pairs make κ less reliable).
          </p>
        ) : (
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Labelers</th>
                  <th scope="col" className="num">
                    Shared pairs
                  </th>
                  <th scope="col" className="num">
                    κ
                  </th>
                  <th scope="col">Reading</th>
                </tr>
              </thead>
              <tbody>
                {data.cohen.map((row) => (
                  <tr key={`${row.labeler_a}/${row.labeler_b}`}>
                    <td>
                      {row.labeler_a} &amp; {row.labeler_b}
                    </td>
                    <td className="num">{row.overlap}</td>
                    <td className="num">{row.kappa.toFixed(2)}</td>
                    <td>{kappaReading(row.kappa)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </div>
  );
}

// --- Pairs and export -------------------------------------------------------------------

function PairsAndExport() {
  const [source, setSource] = useState("");
  return (
    <div className="stack">
      <section className="panel stack" aria-labelledby="label-export-h">
        <h2 className="label-h" id="label-export-h">
          Export as JSONL
        </h2>
        <p className="muted">
          One line per pair with a winner (the labels' majority, or the winner a self-supervised or imported pair came
          with), in the TRL preference format: prompt, chosen, rejected and both plans. Pairs that are tied, without a
          majority or not labeled yet are left out.
        </p>
        <div className="row label-export">
          <SourceSelect value={source} onChange={setSource} />
          <a className="button-link" href={`/api/preferences/export${query({ source })}`} download="preferences.jsonl">
            Download preferences.jsonl
          </a>
        </div>
      </section>
      <CreatePair />
      <PairList />
    </div>
  );
}

function CreatePair() {
  const client = useQueryClient();
  const [runA, setRunA] = useState("");
  const [runB, setRunB] = useState("");
  const create = useMutation({
    mutationFn: () =>
      api<Pair>("/api/preferences/pairs", {
        method: "POST",
        body: { run_a_id: Number(runA), run_b_id: Number(runB), source: "human", metadata: {} },
      }),
    onSuccess: () => {
      setRunA("");
      setRunB("");
      void client.invalidateQueries({ queryKey: ["preferences"] });
    },
  });
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  const valid = /^\d+$/.test(runA) && /^\d+$/.test(runB) && runA !== runB;
  return (
    <section className="panel stack" aria-labelledby="label-pair-h">
      <h2 className="label-h" id="label-pair-h">
        Pair two runs
      </h2>
      <p className="muted">
        Two finished runs of the same task become a pair for labelers. Easiest: pick two runs on the{" "}
        <Link to="/runs">Runs</Link> page and compare them. Or give their ids here.
      </p>
      <form className="row label-pair-form" onSubmit={onSubmit}>
        <label>
          Run A id
          <input inputMode="numeric" value={runA} onChange={(event) => setRunA(event.target.value.trim())} />
        </label>
        <label>
          Run B id
          <input inputMode="numeric" value={runB} onChange={(event) => setRunB(event.target.value.trim())} />
        </label>
        <button type="submit" className="primary" disabled={!valid || create.isPending}>
          {create.isPending ? "Pairing…" : "Pair for labeling"}
        </button>
      </form>
      {create.isError && <ErrorText error={create.error} />}
      {create.isSuccess && (
        <p role="status">
          ✓ Pair #{create.data.id} made (runs #{create.data.run_a_id} and #{create.data.run_b_id}, task #
          {create.data.task_id}). It is in the labeling queue now.
        </p>
      )}
    </section>
  );
}

const PAIRS_PAGE = 10;

function PairList() {
  const [offset, setOffset] = useState(0);
  const pairs = useQuery({
    queryKey: ["preferences", "pairs", offset],
    queryFn: () => api<Page<Pair>>(`/api/preferences/pairs${query({ limit: PAIRS_PAGE, offset })}`),
    placeholderData: (previous) => previous,
  });
  let body: ReactNode;
  if (pairs.isPending) body = <Loading what="Loading pairs" />;
  else if (pairs.isError) body = <ErrorText error={pairs.error} />;
  else if (pairs.data.count === 0) body = <p className="muted">No pairs yet.</p>;
  else {
    const { items, count } = pairs.data;
    body = (
      <>
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Pair</th>
                <th scope="col">Runs</th>
                <th scope="col">Source</th>
                <th scope="col" className="num">
                  Labels
                </th>
                <th scope="col">Made</th>
              </tr>
            </thead>
            <tbody>
              {items.map((pair) => (
                <tr key={pair.id}>
                  <td>#{pair.id}</td>
                  <td>
                    <Link to={`/runs/compare${query({ a: pair.run_a_id, b: pair.run_b_id })}`}>
                      #{pair.run_a_id} vs #{pair.run_b_id}
                    </Link>
                  </td>
                  <td>
                    {pair.source.replaceAll("_", " ")}
                    {pair.metadata?.preferred ? <span className="muted small"> (winner known)</span> : null}
                  </td>
                  <td className="num">{pair.label_count}</td>
                  <td className="small">{when(pair.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <div className="pager">
          <span className="muted small">
            {offset + 1}–{offset + items.length} of {count}
          </span>
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAIRS_PAGE))}>
            Prev
          </button>
          <button type="button" disabled={offset + PAIRS_PAGE >= count} onClick={() => setOffset(offset + PAIRS_PAGE)}>
            Next
          </button>
        </div>
      </>
    );
  }
  return (
    <section className="panel stack" aria-labelledby="label-pairs-h">
      <h2 className="label-h" id="label-pairs-h">
        Pairs
      </h2>
      {body}
    </section>
  );
}
