"""How far the shipped recordings can carry two open goals: upper bounds, printed.

    .venv/bin/python bench/ceilings.py [--seed 0] [--skip-pairs] [--best-of-n]

1. RouterBench frontier (issue 5 asks for macro >= 0.829 at <= $1.5e-3/query). On the
   test split it takes, per benchmark, the best of:
   - every single pair;
   - every agreement cascade: call 2 or 3 pairs, keep their answer when all agree, else
     call one more pair and keep its answer (every call is paid);
   - vote cascades (`vote_options`): call cheap voters one after another, in order of accuracy
     or of accuracy per dollar, and stop once the leading answer's naive-Bayes posterior
     (each voter right with its accuracy, wrong answers spread evenly over the other
     choices) reaches a threshold; after 2 to 5 voters without reaching it, call the
     fallback pair and keep its answer.
   The choice per benchmark is made *on the test items themselves*, so this is an upper
   bound for that family of routers, not a result. Benchmarks are combined exactly: macro
   accuracy is their mean and cost adds, so a sweep over the price of cost traces the
   combined frontier, mixed between vertices as AIQ's hull is.
2. Correct-over-incorrect pairwise accuracy (issue 6 asks for >= 0.75 on routerbench and
   llmrouter test pairs). A plan scorer that sees only the prompt ranks two pairs by an
   estimate of each one's accuracy on that prompt. Printed: the accuracy of several such
   estimates, among them the per-benchmark accuracy *measured on the test items* (the best
   any benchmark-level estimate can do). Then, per benchmark, how well the per-item
   estimates tell apart the items a pair gets right inside one benchmark (ROC AUC; 0.5 is
   chance): what routing within a benchmark, and so any gain beyond part 1's bound, has
   to go on.
3. With --best-of-n, best-of-8 at the same cost as N = 1 (issue 6 asks for +3 points):
   the learned policy is fitted on the train items and samples 8 plans per test item, as
   `orchestrator.evaluate_rm` does; the candidate is chosen at n1's estimated cost
   (`reward.bestofn.select_matched`) by prompt-only estimates, again including the
   benchmark accuracy measured on the test items. The 8 samples are drawn `--draws` times
   (10 by default; the first draw is the one `evaluate_rm` makes), and each gain is given
   as its mean ± sd over the draws: one draw's gain moves by about 0.4 points.

Everything is read from `data/outcomes`; embeddings come from the offline MiniLM cache.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.learning.responses import answer_key  # noqa: E402
from orchestrator.routing.metrics import hull_value, nondecreasing_hull  # noqa: E402
from orchestrator.routing.table import OutcomeTable, load_table, split_table  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data" / "outcomes"
BUDGETS = (0.5e-3, 1.0e-3, 1.5e-3, 2.0e-3, 3.0e-3, 5.0e-3)

Option = tuple[float, float, str]  # (USD summed over the benchmark's items, accuracy on it, what it runs)
CHEAP = 0.2  # a vote cascade's voters cost at most this share of the benchmark's dearest pair
THRESHOLDS = (0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995)  # vote cascades' stopping posteriors


def benchmark_options(test: OutcomeTable, rows: np.ndarray) -> list[Option]:
    """Every single pair and every agreement cascade on the items `rows`."""
    score = np.nan_to_num(test.score[rows])
    cost = np.nan_to_num(test.cost[rows])
    keys = [[answer_key(test.responses[i][j]) for j in range(test.n_pairs)] for i in rows]
    names = [model.split("/")[-1] for model, _ in test.pairs]
    options = [(float(cost[:, j].sum()), float(score[:, j].mean()), names[j]) for j in range(test.n_pairs)]
    for size in (2, 3):
        for group in itertools.combinations(range(test.n_pairs), size):
            agree = np.array(
                [row[group[0]] is not None and all(row[j] == row[group[0]] for j in group) for row in keys]
            )
            paid = cost[:, list(group)].sum(axis=1)
            for fallback in range(test.n_pairs):
                if fallback in group:
                    continue
                s = np.where(agree, score[:, group[0]], score[:, fallback])
                c = paid + np.where(agree, 0.0, cost[:, fallback])
                label = f"agree({'+'.join(names[j] for j in group)}) else {names[fallback]}"
                options.append((float(c.sum()), float(s.mean()), label))
    return options + vote_options(score, cost, keys, names)


def vote_options(score: np.ndarray, cost: np.ndarray, keys: list[list[str | None]], names: list[str]) -> list[Option]:
    """Vote cascades on one benchmark's items (score, cost [m, p]; keys [m][p] answer keys).

    Each voter counts log(acc / (1 - acc) * (K - 1)) for the answer it gives, K the number
    of choice letters the benchmark's answers use (each in at least 1% of them); the
    posterior of the leading answer is its softmax share with the K - (answers seen) others
    at 0. Accuracies are the voters' own on these items (a bound). A benchmark without
    choice letters (code) gets none.
    """
    m, p = score.shape
    letters = Counter(k for row in keys for k in row if k is not None and len(k) == 1)
    choices = sum(1 for count in letters.values() if count >= 0.01 * m * p)
    if choices < 2:
        return []
    accuracy = np.clip(score.mean(axis=0), 0.02, 0.98)
    weight = np.log(accuracy / (1 - accuracy) * (choices - 1))
    mean_cost = cost.mean(axis=0)
    voters = [j for j in range(p) if mean_cost[j] <= CHEAP * mean_cost.max()]
    orders = {
        "by accuracy": sorted(voters, key=lambda j: -accuracy[j]),
        "by accuracy per dollar": sorted(voters, key=lambda j: -(accuracy[j] - 1 / choices) / max(mean_cost[j], 1e-12)),
    }
    options: list[Option] = []
    for how, order in orders.items():
        for depth in range(2, min(5, len(order)) + 1):  # fewer voters than depth: the same cascade again
            voted = "+".join(names[j] for j in order[:depth])
            for threshold in THRESHOLDS:
                stop, paid, chosen = _vote(score, cost, keys, order[:depth], weight, choices, threshold)
                for fallback in range(p):
                    s = np.where(stop, chosen, score[:, fallback])
                    c = paid + np.where(stop, 0.0, cost[:, fallback])
                    label = f"vote({voted}, {how}, p>={threshold}) else {names[fallback]}"
                    options.append((float(c.sum()), float(s.mean()), label))
    return options


def _vote(
    score: np.ndarray,
    cost: np.ndarray,
    keys: list[list[str | None]],
    order: list[int],
    weight: np.ndarray,
    choices: int,
    threshold: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item: whether the voters stopped, what they cost, and the score of the answer they kept."""
    m = score.shape[0]
    stop = np.zeros(m, dtype=bool)
    paid = np.zeros(m)
    chosen = np.zeros(m)
    for i in range(m):
        tally: dict[str, float] = {}
        first: dict[str, int] = {}
        for j in order:
            paid[i] += cost[i, j]
            key = keys[i][j]
            if key is not None:
                tally[key] = tally.get(key, 0.0) + float(weight[j])
                first.setdefault(key, j)
            if tally:
                logits = np.array([*tally.values(), *([0.0] * max(choices - len(tally), 0))])
                share = np.exp(logits - logits.max())
                if share.max() / share.sum() >= threshold:
                    leader = max(tally, key=lambda k: tally[k])
                    stop[i], chosen[i] = True, score[i, first[leader]]
                    break
    return stop, paid, chosen


def routerbench_bound(seed: int) -> None:
    table = load_table([DATA / "routerbench.jsonl.gz"])
    _, test = split_table(table, seed=seed)
    bench = np.asarray(test.benchmarks)
    groups = sorted(set(test.benchmarks))
    options = {b: benchmark_options(test, np.flatnonzero(bench == b)) for b in groups}
    n = test.n_items
    vertices: dict[tuple[float, float], list[str]] = {}
    for price in np.concatenate([[0.0], np.geomspace(1.0, 1e5, 400)]):
        picks = [max(options[b], key=lambda o: o[1] / len(groups) - price * o[0] / n) for b in groups]
        point = (sum(o[0] for o in picks) / n, float(np.mean([o[1] for o in picks])))
        vertices.setdefault(point, [f"{b}: {o[2]}" for b, o in zip(groups, picks, strict=True)])
    hull = nondecreasing_hull(list(vertices))
    gpt4 = test.pairs.index(("gpt-4-1106-preview", "direct"))
    g_acc = float(np.mean([np.nanmean(test.score[bench == b, gpt4]) for b in groups]))
    g_cost = float(np.nanmean(test.cost[:, gpt4]))
    print(f"RouterBench test split: {n} items, benchmarks {', '.join(groups)}")
    print(f"  GPT-4-1106 alone: macro {g_acc:.4f} at ${g_cost:.2e}/query")
    print("  upper bound, best single pair, agreement or vote cascade per benchmark (chosen on the test items):")
    for budget in BUDGETS:
        print(f"    at ${budget:.1e}/query: macro {hull_value(hull, budget):.4f}")
    print("  its vertices:")
    for cost, acc in hull[1:]:
        print(f"    ${cost:.2e}  {acc:.4f}  {'; '.join(vertices.get((cost, acc), ['?']))}")
    oracle = np.nan_to_num(test.score).max(axis=1)
    oracle_macro = np.mean([oracle[bench == b].mean() for b in groups])
    print(f"  per-item oracle (the right pair of every item known in advance): macro {oracle_macro:.4f}")


def both_files() -> OutcomeTable:
    """RouterBench and LLMRouter together, the items some pair answered."""
    table = load_table([DATA / "routerbench.jsonl.gz", DATA / "llmrouter.jsonl.gz"])
    return table.rows(np.flatnonzero(table.available().any(axis=1)))


def group_accuracy(source: OutcomeTable, keys: list[str], wanted: list[str]) -> np.ndarray:
    """float64 [len(wanted), p]: each pair's mean score on the `source` items of each wanted group."""
    labels = np.asarray(keys)
    overall = np.nanmean(source.score, axis=0)
    out = np.empty((len(wanted), source.n_pairs))
    for g in set(wanted):
        rows = labels == g
        with warnings.catch_warnings():  # a pair never recorded in the group: its mean is NaN, replaced below
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(source.score[rows], axis=0) if rows.any() else overall
        out[np.asarray(wanted) == g] = np.where(np.isnan(mean), overall, mean)
    return out


def pairwise_bound(seed: int) -> None:
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    from orchestrator.learning.dataset import default_embedder, make_context
    from orchestrator.learning.features import task_features
    from orchestrator.reward.features import pool_estimates
    from orchestrator.reward.pairs import correct_over_incorrect
    from orchestrator.reward.prior import logit, table_prior

    train, test = split_table(both_files(), seed=seed)
    emb_tr = np.asarray(default_embedder(list(train.prompts)), dtype=np.float32)
    emb_te = np.asarray(default_embedder(list(test.prompts)), dtype=np.float32)
    pairs = correct_over_incorrect(test)
    files = np.asarray(test.sources)[pairs.item]
    counts = ", ".join(f"{f} {int((files == f).sum())}" for f in sorted(set(files)))
    print(f"\nCorrect-over-incorrect pairs of the test items: {len(pairs)} ({counts})")

    def report(name: str, estimate: np.ndarray) -> None:
        win, lose = estimate[pairs.item, pairs.win], estimate[pairs.item, pairs.lose]
        hit = (win > lose) + 0.5 * (win == lose)
        per_file = ", ".join(f"{f} {hit[files == f].mean():.4f}" for f in sorted(set(files)))
        print(f"  {name:58s} {hit.mean():.4f}   ({per_file})")

    report("domain accuracy on train", group_accuracy(train, train.domains, test.domains))
    report("benchmark accuracy on train", group_accuracy(train, train.benchmarks, test.benchmarks))
    report(
        "benchmark accuracy on TEST (benchmark-level ceiling)", group_accuracy(test, test.benchmarks, test.benchmarks)
    )
    _, feature, _ = pool_estimates(make_context(train, emb_tr), emb_te, test.domains, exclude_self=False, prior=None)
    report("the policy's per-item accuracy feature", feature)
    x_tr, x_te = task_features(emb_tr, train.domains), task_features(emb_te, test.domains)
    predicted = np.full((test.n_items, test.n_pairs), 0.5)
    for j in range(train.n_pairs):
        known = ~np.isnan(train.score[:, j])
        y = (train.score[known, j] >= 0.5).astype(int)
        if len(set(y.tolist())) == 2:
            predicted[:, j] = LogisticRegression(C=0.3, max_iter=500).fit(x_tr[known], y).predict_proba(x_te)[:, 1]
    report("per-pair logistic regression on the embedding", predicted)
    prior = table_prior(train, emb_tr, seed=seed)
    assert prior is not None
    estimate = prior.predict(x_te)
    report("OrchRM's accuracy prior (reward.prior)", estimate)
    report("logit mean of that prior and the policy's per-item feature", logit(estimate) + logit(feature))
    within_benchmark_auc(test, {"per-item feature": feature, "logistic regression": predicted})


def within_benchmark_auc(test: OutcomeTable, estimates: dict[str, np.ndarray]) -> None:
    """How well each estimate tells, inside one benchmark, the items a pair gets right: the
    ROC AUC of estimate[:, j] for pair j's recorded correctness on the test items of the
    benchmark, averaged over the pairs with both outcomes there (0.5 = no better than chance)."""
    from sklearn.metrics import roc_auc_score  # type: ignore[import-untyped]

    bench = np.asarray(test.benchmarks)
    print("\nWithin-benchmark AUC of per-item estimates (mean over pairs; 0.5 = chance):")
    print(f"  {'benchmark':22s} {'items':>5s}  " + "  ".join(f"{name:>20s}" for name in estimates))
    for b in sorted(set(test.benchmarks)):
        rows = np.flatnonzero(bench == b)
        cells = []
        for estimate in estimates.values():
            aucs = []
            for j in range(test.n_pairs):
                known = rows[~np.isnan(test.score[rows, j])]
                y = test.score[known, j] >= 0.5
                if 0 < y.sum() < len(y):
                    aucs.append(roc_auc_score(y, estimate[known, j]))
            cells.append(f"{np.mean(aucs):20.3f}" if aucs else f"{'-':>20s}")
        print(f"  {b:22s} {len(rows):5d}  " + "  ".join(cells))


def best_of_n_bound(seed: int, n: int = 8, lam: float = 0.05, draws: int = 10) -> None:
    """Best-of-n at n1's estimated cost (as `orchestrator.evaluate_rm`), selected by prompt-only
    estimates, over `draws` independent draws of the n samples (the first is evaluate_rm's)."""
    from orchestrator.evaluate_rm import mean_sd, sample_draws, sampled_in_every_draw
    from orchestrator.learning.dataset import default_embedder, encode
    from orchestrator.learning.method import LearnedMethod
    from orchestrator.reward.bestofn import evaluate_lines
    from orchestrator.reward.features import pool_estimates
    from orchestrator.reward.prior import logit

    train, test = split_table(both_files(), seed=seed)
    emb_te = np.asarray(default_embedder(list(test.prompts)), dtype=np.float32)
    method = LearnedMethod(None)
    method.fit(train, seed=seed)
    assert method.context is not None
    batch = encode(test, emb_te, method.context, with_outcomes=False)
    draws_of = sample_draws(method, batch, n=n, lam=lam, seed=seed, draws=draws)
    keep = np.flatnonzero(sampled_in_every_draw(draws_of))
    test, emb_te = test.rows(keep), emb_te[keep]
    rows = np.arange(test.n_items)[:, None]
    _, accuracy, cost = pool_estimates(method.context, emb_te, test.domains, exclude_self=False, prior=None)
    feature = logit(accuracy)
    on_train = logit(np.clip(group_accuracy(train, train.benchmarks, test.benchmarks), 0.01, 0.99))
    on_test = logit(np.clip(group_accuracy(test, test.benchmarks, test.benchmarks), 0.01, 0.99))
    estimates = {
        "the policy's per-item accuracy feature": feature,
        "benchmark accuracy on train": on_train,
        "benchmark accuracy on TEST (benchmark-level ceiling)": on_test,
        "the per-item feature + benchmark accuracy on TEST": feature + on_test,
    }
    gains: dict[str, list[float]] = {name: [] for name in estimates}
    ratios: dict[str, list[float]] = {name: [] for name in estimates}
    n1s, oracles, distinct = [], [], []
    for candidates in draws_of:
        cand = candidates[keep]
        distinct.append(np.mean([len(set(row)) for row in cand.tolist()]))
        for name, estimate in estimates.items():
            line = evaluate_lines(test, cand, estimate[rows, cand], cost[rows, cand])
            n1, chosen = line["n1"], line["rm_matched"]
            gains[name].append(100 * (chosen.macro_acc - n1.macro_acc))
            ratios[name].append(chosen.cost_per_query / n1.cost_per_query)
        n1s.append(n1.macro_acc)
        oracles.append(line["oracle"].macro_acc)
    print(f"\nBest-of-{n} at λ={lam}, one plan executed at n1's estimated cost: {test.n_items} test items")
    print(f"  {draws} draws of the policy's {n} samples (the first is evaluate_rm's); mean ± sd over the draws")
    print(f"  distinct pairs per item {np.mean(distinct):.2f}; n1 macro {mean_sd(n1s)}")
    print(f"  oracle pass@{n} {mean_sd(oracles)}")
    for name in estimates:
        first = gains[name][0]
        print(
            f"  {name:58s} {mean_sd(gains[name], 2, '+')} points (first draw {first:+.2f}),"
            f" {np.mean(ratios[name]):.2f}x n1's dollars"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="split seed (sources with an upstream split ignore it)")
    parser.add_argument(
        "--skip-pairs", action="store_true", help="skip the pairwise part (the RouterBench bound needs no embeddings)"
    )
    parser.add_argument(
        "--best-of-n", action="store_true", help="also fit the policy and bound best-of-8 selection (about 5 min more)"
    )
    parser.add_argument("--draws", type=int, default=10, help="draws of the 8 samples for --best-of-n (default 10)")
    args = parser.parse_args()
    if args.draws < 1:
        parser.error("--draws must be at least 1")
    start = time.perf_counter()
    routerbench_bound(args.seed)
    if not args.skip_pairs:
        pairwise_bound(args.seed)
    if args.best_of_n:
        best_of_n_bound(args.seed, draws=args.draws)
    print(f"\n({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
