#!/usr/bin/env python3
"""scripts/repro_correlation.py - needle failures against attention entropy.

The RoPE-extensions paper's second claim (Zhong et al. 2024, App. C): needle
failures coincide with high attention entropy. For every stored needle cell of a
sweep (newest ok run per cell), each depth point gives the accuracy
(series acc_by_depth) and the mean attention entropy of the rows that produce
the answer (series entropy_by_depth). This prints the depth x length accuracy
heat map per method, then the Pearson correlation between failure rate
(1 - acc) and entropy over all (method, length, depth) points, and within each
length (entropy grows with length by itself, so the pooled number mixes the two).
Past the training length accuracy is often 0 at every point, so it also prints
the correlation between entropy and the teacher-forced log-probability of the
gold answer (series logprob_by_depth), which keeps its signal there.

    python3 scripts/repro_correlation.py [results/repro.db] [sweep] [--seed S] [--reference M]

With several training seeds in the sweep, the heat map shows the mean over the
seeds, the correlations are printed for each seed and then pooled over every
seed's points (a point is one method, length, depth and seed), and the JS
table compares each seed's cells with the same seed's reference cell (its own
model) and shows the mean over seeds, then each seed's value. --seed S keeps
one seed's cells only.

With several seeds it also prints, for each length and over all points, the
mean of the per-seed r and its 95 % t-interval across the seeds (the same
formula as scripts/repro_intervals.py --seeds; a seed whose r is undefined,
no point succeeding or none failing, is left out and the count says so).

Last, for the attn cells of the sweep, the Jensen-Shannon divergence between
each cell's mean attention over distance buckets (series mass_by_distance) and
that of a reference method at the sweep's shortest length: --reference M, by
default plain `rope` when the sweep has it (RoPE at the training length in the
repro configs), else the first of the sweep's attn methods by name. One
reference for every method, also for fine-tuned models, whose own js_train
compares with their own training-time attention. For a method without
fine-tuning it equals the cell's js_train. The reference is named, never
taken from the order in which processes happened to store cells.

Standard library only (sqlite3); reads the store, writes nothing. Exit 2 on a
store it cannot read or a sweep (seed) with no needle cells.
"""
import argparse
import math
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from repro_intervals import across  # noqa: E402  (one t interval for every script)


def pearson(xs, ys):
    n = len(xs)
    if n < 3:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def fail(msg, hint):
    sys.stderr.write(f"repro_correlation: {msg}\n  hint: {hint}\n")
    sys.exit(2)


def mean(v):
    return sum(v) / len(v) if v else float("nan")


def newest_runs(con, sweep, task, order, seed=None):
    """(id, method, length, seed) of the newest ok run of every cell of one task in a sweep (one seed's, if given)."""
    return con.execute(
        "SELECT r.id, r.method, r.length, r.seed FROM runs r WHERE r.sweep = ? AND r.status = 'ok' "
        "AND r.task LIKE ? AND (? IS NULL OR r.seed = ?) AND r.id = (SELECT MAX(id) FROM runs q "
        f"WHERE q.sweep = r.sweep AND q.key = r.key AND q.status = 'ok') ORDER BY {order}",
        (sweep, task + "%", seed, seed)).fetchall()


def needle_points(con, runs):
    """(method, length, depth, seed, acc, entropy, log p(gold)) of every depth point of the runs."""
    points = []
    for rid, method, length, seed in runs:
        s = {}
        for name, x, y in con.execute("SELECT series, x, y FROM series WHERE run_id = ?", (rid,)):
            s.setdefault(name, {})[x] = y
        for d, acc in sorted(s.get("acc_by_depth", {}).items()):
            ent = s.get("entropy_by_depth", {}).get(d)
            lp = s.get("logprob_by_depth", {}).get(d, float("nan"))
            if ent is not None:
                points.append((method, length, d, seed, acc, ent, lp))
    return points


def heat_maps(points, methods, lengths, depths):
    for m in methods:
        print(f"\n{m}: accuracy (mean answer entropy) by depth, mean over seeds")
        print("| length | " + " | ".join(f"{d:.0%}" for d in depths) + " |")
        print("|---:|" + "---:|" * len(depths))
        for L in lengths:
            cells = []
            for d in depths:
                at = [p for p in points if p[0] == m and p[1] == L and p[2] == d]
                cells.append(f"{mean([p[4] for p in at]):.2f} ({mean([p[5] for p in at]):.2f})" if at else "")
            print(f"| {L} | " + " | ".join(cells) + " |")


def correlations(points, lengths, label):
    """r(failure, entropy) and r(log p, entropy) over the points, and within each length.
    Returns {length or 'all': (r failure, r log p)}."""
    fail = [1.0 - p[4] for p in points]
    ent = [p[5] for p in points]
    out = {"all": (pearson(fail, ent), pearson([p[6] for p in points], ent))}
    print(f"\n{label}: r(failure rate, answer entropy) = {out['all'][0]:+.3f}, "
          f"r(log p(gold), answer entropy) = {out['all'][1]:+.3f} over {len(points)} points")
    for L in lengths:
        sub = [p for p in points if p[1] == L]
        r = pearson([1.0 - p[4] for p in sub], [p[5] for p in sub])
        ok = [p[5] for p in sub if p[4] >= 0.5]
        bad = [p[5] for p in sub if p[4] < 0.5]
        rl = pearson([p[6] for p in sub], [p[5] for p in sub])
        out[L] = (r, rl)
        print(f"  length {L}: r(failure, entropy) = {r:+.3f}, r(log p, entropy) = {rl:+.3f} over {len(sub)} points; "
              f"mean entropy where acc >= 0.5: {mean(ok):.3f} ({len(ok)}), where acc < 0.5: {mean(bad):.3f} ({len(bad)})")
    return out


def across_seeds(per_seed, lengths):
    """Mean of the per-seed r and its t-interval across the seeds, for all points and each length."""
    def summary(rs):
        rs = [r for r in rs if not math.isnan(r)]
        if len(rs) < 2:
            return f"n/a ({len(rs)} seed{'s' if len(rs) != 1 else ''} with an r)"
        m, lo, hi = across(rs)
        return f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}] ({len(rs)} seeds)"
    print("\nacross seeds (mean of the per-seed r [95 % t-interval]):")
    for key in ["all"] + lengths:
        name = "all points" if key == "all" else f"length {key}"
        print(f"  {name}: r(failure, entropy) {summary([d[key][0] for d in per_seed])}; "
              f"r(log p, entropy) {summary([d[key][1] for d in per_seed])}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db", nargs="?", default="results/repro.db", help="the store (default results/repro.db)")
    ap.add_argument("sweep", nargs="?", default="rope-extensions-attention", help="the sweep's name")
    ap.add_argument("--seed", type=int, help="one seed's cells only (default: each seed, then pooled)")
    ap.add_argument("--reference", help="the JS table's reference method (default: rope if present)")
    args = ap.parse_args()
    try:
        con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        runs = newest_runs(con, args.sweep, "needle", "r.method, r.length, r.seed", args.seed)
    except sqlite3.Error as e:
        fail(f"cannot read {args.db}: {e}", "give a lenx store (a .db file)")
    if not runs:
        fail(f"no needle cells of sweep '{args.sweep}'" + (f" with seed {args.seed}" if args.seed is not None else "")
             + f" in {args.db}", f"./lenx run configs/repro/{args.sweep}.yaml --db {args.db}")
    points = needle_points(con, runs)
    methods = sorted({p[0] for p in points}, key=lambda m: [r[1] for r in runs].index(m))
    lengths = sorted({p[1] for p in points})
    seeds = sorted({p[3] for p in points})
    heat_maps(points, methods, lengths, sorted({p[2] for p in points}))
    if len(seeds) > 1:
        per_seed = [correlations([p for p in points if p[3] == sd], lengths, f"seed {sd}") for sd in seeds]
        across_seeds(per_seed, lengths)
    correlations(points, lengths, "pooled over seeds " + ", ".join(map(str, seeds)) if len(seeds) > 1
                 else f"seed {seeds[0]}")
    js_table(con, args.sweep, args.seed, args.reference)


def js(p, q):
    """Jensen-Shannon divergence (nats) of two bucket -> mass maps (harness/core/diag.c)."""
    keys = set(p) | set(q)
    sp, sq = sum(p.values()), sum(q.values())
    out = 0.0
    for k in keys:
        a, b = p.get(k, 0.0) / sp, q.get(k, 0.0) / sq
        m = 0.5 * (a + b)
        out += (0.5 * a * math.log(a / m) if a > 0 else 0.0) + (0.5 * b * math.log(b / m) if b > 0 else 0.0)
    return out


def js_table(con, sweep, seed, reference=None):
    runs = newest_runs(con, sweep, "attn", "r.id", seed)
    if not runs:
        return
    mass = {}
    for rid, method, length, sd in runs:
        mass[(method, length, sd)] = {x: y for x, y in con.execute(
            "SELECT x, y FROM series WHERE run_id = ? AND series = 'mass_by_distance'", (rid,))}
    methods = list(dict.fromkeys(r[1] for r in runs))
    if reference is None:
        reference = "rope" if "rope" in methods else min(methods)
    elif reference not in methods:
        fail(f"--reference '{reference}' has no attn cell in sweep '{sweep}'", "one of: " + ", ".join(methods))
    methods.remove(reference)
    methods.insert(0, reference)
    lengths = sorted({r[2] for r in runs})
    seeds = sorted({r[3] for r in runs})
    refs = {sd: mass.get((reference, lengths[0], sd)) for sd in seeds}
    print(f"\nJS divergence (nats) of the mean attention over distance from {reference} at {lengths[0]}"
          + (" of the same seed: mean over seeds (seed " + " / ".join(map(str, seeds)) + ")" if len(seeds) > 1 else ""))
    print("| method | " + " | ".join(str(L) for L in lengths) + " |")
    print("|---|" + "---:|" * len(lengths))
    for m in methods:
        cells = []
        for L in lengths:
            v = [js(mass[(m, L, sd)], refs[sd]) for sd in seeds if mass.get((m, L, sd)) and refs[sd]]
            each = " (" + " / ".join(f"{x:.4f}" for x in v) + ")" if len(v) > 1 else ""
            cells.append(f"{mean(v):.4f}{each}" if v else "")
        print(f"| {m} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
