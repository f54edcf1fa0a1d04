"""Reading preference pairs: the labeling queue, agreement between labelers, the JSONL export."""

from __future__ import annotations

import hashlib
import importlib
import itertools
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, QuerySet

from orchestrator.reward.agreement import cohen_kappa, fleiss_kappa
from orchestrator.reward.jsonl import PreferenceRecord
from orchestrator.reward.plans import Plan
from studio.errors import NotFound
from studio.models import PreferenceLabel, PreferencePair, User, Verdict
from studio.selectors.plans import run_plans

log = logging.getLogger(__name__)

# Scores one plan per (task text, plan); higher is better.
Scorer = Callable[[list[str], list[Plan]], Sequence[float]]

# The queue ranks at most this many unlabeled pairs (the fewest-labeled, oldest first).
MAX_CANDIDATES = 1000


def pair_list(*, source: str = "") -> QuerySet[PreferencePair]:
    pairs = PreferencePair.objects.annotate(label_count=Count("labels"))
    if source:
        pairs = pairs.filter(source=source)
    return pairs.order_by("-created_at", "-id")


def pair_get(*, pair_id: int) -> PreferencePair:
    pair = pair_list().filter(pk=pair_id).first()
    if pair is None:
        raise NotFound(f"Preference pair {pair_id} does not exist.")
    return pair


# --- The labeling queue -------------------------------------------------------------


@dataclass(frozen=True)
class QueueItem:
    pair: PreferencePair
    swap: bool  # show run B on the left; verdicts still name A and B as stored
    margin: float | None  # |score(A) - score(B)| by the reward model; None when unscored
    plan_a: Plan | None
    plan_b: Plan | None


def display_swap(*, pair_id: int, user_id: int) -> bool:
    """Whether this user sees the pair's run B on the left: random-looking, but the same on every visit."""
    digest = hashlib.sha256(f"orchestra.preferences.swap:{pair_id}:{user_id}".encode()).digest()
    return bool(digest[0] & 1)


def _undecided() -> QuerySet[PreferencePair]:
    """Pairs people are asked about: not those whose winner is known by construction or import."""
    return PreferencePair.objects.exclude(metadata__has_key="preferred")


def labeling_queue(*, user: User, limit: int = 10, scorer: Scorer | None = None) -> list[QueueItem]:
    """Pairs this user has not labeled (nor skipped), the most informative first.

    Most informative: the reward model is least sure, i.e. the smallest margin
    |score(plan A) - score(plan B)|. `scorer` defaults to `studio.services.reward.default_scorer()`.
    Without a scorer, and for pairs a plan is missing for, the order is fewest labels
    first, then oldest; scored pairs come before unscored ones.
    """
    candidates = list(
        _undecided()
        .exclude(labels__labeler=user)
        .annotate(label_count=Count("labels"))
        .select_related("task", "run_a", "run_b")
        .order_by("label_count", "created_at", "id")[:MAX_CANDIDATES]
    )
    plans = run_plans(run for pair in candidates for run in (pair.run_a, pair.run_b))
    margins = _margins(scorer or reward_scorer(), candidates, plans)
    # A stable sort: equal margins, and the unscored pairs, keep the fallback order.
    ranked = sorted(candidates, key=lambda pair: (margins[pair.pk] is None, margins[pair.pk] or 0.0))
    return [
        QueueItem(
            pair=pair,
            swap=display_swap(pair_id=pair.pk, user_id=user.pk),
            margin=margins[pair.pk],
            plan_a=plans[pair.run_a_id],
            plan_b=plans[pair.run_b_id],
        )
        for pair in ranked[:limit]
    ]


def labeling_progress(*, user: User) -> dict[str, int]:
    """How many of the pairs in the queue's pool this user has labeled (skips included)."""
    pairs = _undecided()
    total = pairs.count()
    labeled = pairs.filter(labels__labeler=user).distinct().count()
    return {"labeled": labeled, "total": total, "remaining": total - labeled}


def reward_scorer() -> Scorer | None:
    """The reward model's scorer when a default checkpoint exists; None otherwise, or if it fails to load."""
    try:
        module = importlib.import_module("studio.services.reward")
        factory = getattr(module, "default_scorer", None)
        scorer: Scorer | None = factory() if callable(factory) else None
    except Exception:
        # The queue must work without a reward model: fall back to fewest labels first.
        log.warning("no reward-model scorer for the labeling queue", exc_info=True)
        return None
    return scorer


def _margins(
    scorer: Scorer | None, pairs: Sequence[PreferencePair], plans: dict[int, Plan | None]
) -> dict[int, float | None]:
    margins: dict[int, float | None] = {pair.pk: None for pair in pairs}
    scorable = [pair for pair in pairs if plans[pair.run_a_id] is not None and plans[pair.run_b_id] is not None]
    if scorer is None or not scorable:
        return margins
    texts = [pair.task.text for pair in scorable]
    batch = [plans[pair.run_a_id] for pair in scorable] + [plans[pair.run_b_id] for pair in scorable]
    try:
        scores = [float(score) for score in scorer(texts + texts, [plan for plan in batch if plan is not None])]
    except Exception:
        log.warning("the reward-model scorer failed; the labeling queue falls back to label counts", exc_info=True)
        return margins
    if len(scores) != len(batch):
        log.warning("the scorer returned %d scores for %d plans; ignoring them", len(scores), len(batch))
        return margins
    n = len(scorable)
    for i, pair in enumerate(scorable):
        margins[pair.pk] = abs(scores[i] - scores[n + i])
    return margins


# --- Agreement ----------------------------------------------------------------------


def pairs_agreement(*, source: str = "", min_overlap: int = 5) -> dict[str, Any]:
    """Agreement over the pairs with at least two non-skip labels.

    - `cohen`: Cohen's κ of every two labelers who both labeled at least `min_overlap` of them;
    - `fleiss`: Fleiss' κ over the pairs with exactly the most common number of raters
      (the larger number on a tie), or None when no pair qualifies;
    - counts of pairs, labels and labelers. Verdicts are a, b and tie; skips are left out.
    """
    labels = PreferenceLabel.objects.exclude(verdict=Verdict.SKIP).select_related("labeler")
    if source:
        labels = labels.filter(pair__source=source)
    by_pair: dict[int, dict[str, str]] = defaultdict(dict)
    for label in labels.order_by("pair_id", "labeler__username"):
        by_pair[label.pair_id][label.labeler.username] = label.verdict
    rated = {pair_id: verdicts for pair_id, verdicts in by_pair.items() if len(verdicts) >= 2}
    labelers = sorted({name for verdicts in rated.values() for name in verdicts})
    return {
        "pairs": len(rated),
        "labels": sum(len(verdicts) for verdicts in rated.values()),
        "labelers": len(labelers),
        "min_overlap": min_overlap,
        "cohen": _cohen(rated, labelers, min_overlap),
        "fleiss": _fleiss(rated),
    }


def _cohen(rated: dict[int, dict[str, str]], labelers: list[str], min_overlap: int) -> list[dict[str, Any]]:
    results = []
    for first, second in itertools.combinations(labelers, 2):
        shared = [verdicts for verdicts in rated.values() if first in verdicts and second in verdicts]
        if len(shared) >= max(min_overlap, 1):
            kappa = cohen_kappa([v[first] for v in shared], [v[second] for v in shared])
            results.append({"labeler_a": first, "labeler_b": second, "overlap": len(shared), "kappa": kappa})
    return results


def _fleiss(rated: dict[int, dict[str, str]]) -> dict[str, Any] | None:
    if not rated:
        return None
    counts = Counter(len(verdicts) for verdicts in rated.values())
    raters = max(counts, key=lambda k: (counts[k], k))
    rows = [list(verdicts.values()) for verdicts in rated.values() if len(verdicts) == raters]
    return {"raters": raters, "pairs": len(rows), "kappa": fleiss_kappa(rows)}


# --- Export -------------------------------------------------------------------------


@dataclass
class PreferenceExport:
    records: list[PreferenceRecord]
    skipped: dict[str, int] = field(default_factory=dict)  # why a pair has no winner -> how many


def pair_winner(pair: PreferencePair, verdicts: list[str]) -> str:
    """The winner, `a` or `b`; else why there is none: `tie`, `no_majority` or `unlabeled`.

    `metadata["preferred"]` decides when set (self-supervised and imported pairs). Otherwise
    the labels do, skips left out: the most common verdict wins when it is a or b and more
    common than each other verdict.
    """
    preferred = pair.metadata.get("preferred") if isinstance(pair.metadata, dict) else None
    if preferred in ("a", "b"):
        return str(preferred)
    counts = Counter(v for v in verdicts if v != Verdict.SKIP).most_common()
    if not counts:
        return "unlabeled"
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "no_majority"
    return counts[0][0] if counts[0][0] in ("a", "b") else "tie"


def preferences_export(*, source: str = "") -> PreferenceExport:
    """Every pair with a winner as a record (prompt: the task; chosen / rejected: the runs'
    final answers and plans); the others are counted in `skipped`."""
    pairs = PreferencePair.objects.select_related("task", "run_a", "run_b").order_by("id")
    if source:
        pairs = pairs.filter(source=source)
    pairs_list = list(pairs)
    labels: dict[int, list[PreferenceLabel]] = defaultdict(list)
    for label in (
        PreferenceLabel.objects.filter(pair__in=pairs).select_related("labeler").order_by("pair_id", "created_at", "id")
    ):
        labels[label.pair_id].append(label)
    plans = run_plans(run for pair in pairs_list for run in (pair.run_a, pair.run_b))
    export = PreferenceExport(records=[])
    for pair in pairs_list:
        winner = pair_winner(pair, [label.verdict for label in labels[pair.pk]])
        if winner not in ("a", "b"):
            export.skipped[winner] = export.skipped.get(winner, 0) + 1
            continue
        chosen, rejected = (pair.run_a, pair.run_b) if winner == "a" else (pair.run_b, pair.run_a)
        export.records.append(
            PreferenceRecord(
                prompt=pair.task.text,
                chosen=chosen.final_answer,
                rejected=rejected.final_answer,
                source=pair.source,
                chosen_plan=plans[chosen.pk],
                rejected_plan=plans[rejected.pk],
                extra={
                    "pair_id": pair.pk,
                    "task_id": pair.task_id,
                    "benchmark": pair.task.benchmark,
                    "domain": pair.task.domain,
                    "labels": [{"labeler": lb.labeler.username, "verdict": lb.verdict} for lb in labels[pair.pk]],
                },
            )
        )
    return export
