// An evaluation's progress as it happens, over /ws/evaluations/<id>/ while it is queued or
// running: each message updates the cached evaluation (and its entry in the list); its end
// refetches it, for the report.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";

import type { Page } from "../../api/client";
import type { EvaluationProgress } from "../../api/events";
import { keys } from "../../api/queryKeys";
import type { Evaluation, EvaluationDetail } from "../../api/types";
import { ACTIVE } from "../../components/JobForm";
import { watchJob } from "../../lib/jobSocket";

/** An evaluation with a progress message applied (progress never moves back). */
export function withProgress<T extends Evaluation>(evaluation: T, message: EvaluationProgress): T {
  if (evaluation.id !== message.id) return evaluation;
  return {
    ...evaluation,
    status: message.status,
    progress: Math.max(evaluation.progress, message.progress),
    message: message.message,
  };
}

/** Follow evaluation `id` while `active`; `onLost` when its socket closes unasked. */
export function useEvaluationStream(id: number, active: boolean, onLost: () => void): void {
  const client = useQueryClient();
  useEffect(() => {
    if (!active) return;
    return watchJob<EvaluationProgress>(
      `/ws/evaluations/${id}/`,
      (message) => {
        client.setQueryData<EvaluationDetail>(keys.evaluations.detail(id), (now) => now && withProgress(now, message));
        client.setQueryData<Page<Evaluation>>(
          keys.evaluations.list,
          (page) => page && { ...page, items: page.items.map((e) => withProgress(e, message)) },
        );
        if (!ACTIVE.has(message.status)) {
          void client.invalidateQueries({ queryKey: keys.evaluations.detail(id) });
          void client.invalidateQueries({ queryKey: keys.evaluations.list });
        }
      },
      onLost,
    );
  }, [active, id, client, onLost]);
}
