// The labeling queue: one pair at a time, the labeler's progress, and undo of the last
// verdict (its button, or U), which puts that pair back in front.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";

import { api, query } from "../../api/client";
import { keys } from "../../api/queryKeys";
import type { Queue, QueueItem } from "../../api/types";
import { Empty, ErrorText, Loading } from "../../components/States";
import { useHotkeys } from "../../lib/hotkeys";
import { PairView } from "./PairView";
import { SAID, type Choice } from "./verdicts";

const QUEUE_LIMIT = 20;

interface Saved {
  item: QueueItem;
  choice: Choice;
}

export function LabelQueue() {
  const client = useQueryClient();
  const queue = useQuery({
    queryKey: keys.preferences.queue,
    queryFn: () => api<Queue>(`/api/preferences/queue${query({ limit: QUEUE_LIMIT })}`),
  });
  // Pairs labeled here since the queue was last read: hidden at once, before it is read again.
  const [done, setDone] = useState<number[]>([]);
  // The last verdict given, while it can be undone; and a pair whose verdict was undone.
  const [saved, setSaved] = useState<Saved | null>(null);
  const [back, setBack] = useState<QueueItem | null>(null);

  const refresh = () => {
    void client.invalidateQueries({ queryKey: keys.preferences.queue });
    void client.invalidateQueries({ queryKey: keys.preferences.agreements });
  };
  const undo = useMutation({
    mutationFn: (last: Saved) => api(`/api/preferences/pairs/${last.item.pair_id}/labels`, { method: "DELETE" }),
    onSuccess: (_, last) => {
      setDone((ids) => ids.filter((id) => id !== last.item.pair_id));
      setBack(last.item);
      setSaved(null);
      refresh();
    },
  });
  const onLabeled = (item: QueueItem, choice: Choice) => {
    setDone((ids) => [...ids, item.pair_id]);
    setBack(null);
    setSaved({ item, choice });
    refresh();
  };
  useHotkeys(
    {
      U: () => {
        if (saved && !undo.isPending) undo.mutate(saved);
      },
    },
    saved !== null,
  );

  if (queue.isPending) return <Loading what="Loading the labeling queue" />;
  if (queue.isError) return <ErrorText error={queue.error} />;

  const served = queue.data.items;
  const item = back ?? served.find((entry) => !done.includes(entry.pair_id));
  const { total } = queue.data.progress;
  // The server's count, plus what was labeled here and is still in the queue it last sent.
  const labeledHere = done.filter((id) => served.some((s) => s.pair_id === id)).length;
  const labeled = Math.min(total, queue.data.progress.labeled + labeledHere);

  return (
    <div className="stack">
      <Progress labeled={labeled} total={total} />
      {saved && (
        <div className="label-saved row" data-testid="label-submitted" role="status">
          <span>
            ✓ Saved pair #{saved.item.pair_id}: {SAID[saved.choice]}.
          </span>
          <button type="button" data-testid="label-undo" disabled={undo.isPending} onClick={() => undo.mutate(saved)}>
            {undo.isPending ? "Undoing…" : "Undo"} <kbd>U</kbd>
          </button>
        </div>
      )}
      {undo.isError && <ErrorText error={undo.error} />}
      {back && (
        <p className="muted small" role="status" data-testid="label-undone">
          Your verdict on pair #{back.pair_id} was undone; judge it again.
        </p>
      )}
      {item ? (
        <PairView key={item.pair_id} item={item} onLabeled={onLabeled} />
      ) : queue.isFetching ? (
        <Loading what="Loading the next pairs" />
      ) : (
        <NothingLeft total={total} onCheck={() => void queue.refetch()} />
      )}
    </div>
  );
}

function NothingLeft({ total, onCheck }: { total: number; onCheck: () => void }) {
  return (
    <Empty title="Nothing left to label">
      <p>
        {total === 0
          ? "There are no pairs to label yet."
          : `You have labeled all ${total} pair${total === 1 ? "" : "s"} in the queue.`}{" "}
        A pair is two finished runs of the same task. Researchers make pairs by picking two runs (Runs → Compare → “Pair
        for labeling”) or by importing a JSONL file of pairs. New pairs show up here.
      </p>
      <button type="button" onClick={onCheck}>
        Check again
      </button>
    </Empty>
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
