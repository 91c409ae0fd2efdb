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

    python3 scripts/repro_correlation.py [results/repro.db] [sweep]

Last, for the attn cells of the sweep, the Jensen-Shannon divergence between
each cell's mean attention over distance buckets (series mass_by_distance) and
that of the sweep's first method at its shortest length (plain RoPE at the
training length in the repro config): one reference for every method, also for
fine-tuned models, whose own js_train compares with their own training-time
attention. For a method without fine-tuning it equals the cell's js_train.

Standard library only (sqlite3); reads the store, writes nothing.
"""
import math
import sqlite3
import sys


def pearson(xs, ys):
    n = len(xs)
    if n < 3:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def newest_runs(con, sweep, task, order):
    """(id, method, length) of the newest ok run of every cell of one task in a sweep."""
    return con.execute(
        "SELECT r.id, r.method, r.length FROM runs r WHERE r.sweep = ? AND r.status = 'ok' "
        "AND r.task LIKE ? AND r.id = (SELECT MAX(id) FROM runs q WHERE q.sweep = r.sweep "
        f"AND q.key = r.key AND q.status = 'ok') ORDER BY {order}", (sweep, task + "%")).fetchall()


def main():
    db = sys.argv[1] if len(sys.argv) > 1 else "results/repro.db"
    sweep = sys.argv[2] if len(sys.argv) > 2 else "rope-extensions-attention"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    runs = newest_runs(con, sweep, "needle", "r.method, r.length")
    if not runs:
        sys.exit(f"repro_correlation: no needle cells of sweep '{sweep}' in {db}\n"
                 f"  hint: ./lenx run configs/repro/{sweep}.yaml --db {db}")
    points = []     # (method, length, depth, acc, entropy, log p(gold))
    for rid, method, length in runs:
        s = {}
        for name, x, y in con.execute("SELECT series, x, y FROM series WHERE run_id = ?", (rid,)):
            s.setdefault(name, {})[x] = y
        for d, acc in sorted(s.get("acc_by_depth", {}).items()):
            ent = s.get("entropy_by_depth", {}).get(d)
            lp = s.get("logprob_by_depth", {}).get(d, float("nan"))
            if ent is not None:
                points.append((method, length, d, acc, ent, lp))
    methods = sorted({p[0] for p in points}, key=lambda m: [r[1] for r in runs].index(m))
    lengths = sorted({p[1] for p in points})
    depths = sorted({p[2] for p in points})
    for m in methods:
        print(f"\n{m}: accuracy (mean answer entropy) by depth")
        print("| length | " + " | ".join(f"{d:.0%}" for d in depths) + " |")
        print("|---:|" + "---:|" * len(depths))
        for L in lengths:
            row = {p[2]: p for p in points if p[0] == m and p[1] == L}
            cells = [f"{row[d][3]:.1f} ({row[d][4]:.2f})" if d in row else "" for d in depths]
            print(f"| {L} | " + " | ".join(cells) + " |")
    fail = [1.0 - p[3] for p in points]
    ent = [p[4] for p in points]
    print(f"\npooled: r(failure rate, answer entropy) = {pearson(fail, ent):+.3f}, "
          f"r(log p(gold), answer entropy) = {pearson([p[5] for p in points], ent):+.3f} over {len(points)} points")
    for L in lengths:
        sub = [p for p in points if p[1] == L]
        r = pearson([1.0 - p[3] for p in sub], [p[4] for p in sub])
        ok = [p[4] for p in sub if p[3] >= 0.5]
        bad = [p[4] for p in sub if p[3] < 0.5]
        mean = lambda v: sum(v) / len(v) if v else float("nan")
        rl = pearson([p[5] for p in sub], [p[4] for p in sub])
        print(f"length {L}: r(failure, entropy) = {r:+.3f}, r(log p, entropy) = {rl:+.3f} over {len(sub)} points; "
              f"mean entropy where acc >= 0.5: {mean(ok):.3f} ({len(ok)}), where acc < 0.5: {mean(bad):.3f} ({len(bad)})")

    js_table(con, sweep)


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


def js_table(con, sweep):
    runs = newest_runs(con, sweep, "attn", "r.id")
    if not runs:
        return
    mass = {}
    for rid, method, length in runs:
        mass[(method, length)] = {x: y for x, y in con.execute(
            "SELECT x, y FROM series WHERE run_id = ? AND series = 'mass_by_distance'", (rid,))}
    methods = list(dict.fromkeys(r[1] for r in runs))
    lengths = sorted({r[2] for r in runs})
    ref = mass.get((methods[0], lengths[0]))
    if not ref:
        return
    print(f"\nJS divergence (nats) of the mean attention over distance from {methods[0]} at {lengths[0]}")
    print("| method | " + " | ".join(str(L) for L in lengths) + " |")
    print("|---|" + "---:|" * len(lengths))
    for m in methods:
        cells = [f"{js(mass[(m, L)], ref):.4f}" if mass.get((m, L)) else "" for L in lengths]
        print(f"| {m} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
