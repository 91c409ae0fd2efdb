#!/usr/bin/env python3
"""scripts/repro_depths.py - retrieval accuracy by needle depth, over seeds.

A retrieval cell (needle, passkey, line, ...) stores its accuracy at each depth
of its grid as the series `acc_by_depth` (x the depth, y the fraction right of
the samples at it) beside `n_samples` (samples x depths). It reads them from
a store, or from the series snapshot `results/repro/NAME.depths.csv` (`lenx
table --series acc_by_depth --format csv`) with the counts from the metrics
snapshot beside it (`results/repro/NAME.csv`, or --counts). For each method at
one length it prints, per group of depths, the instances right pooled over
the seeds with their Wilson 95 % interval, the count of each seed, and with
--against METHOD the difference from METHOD's count paired by seed: the mean
over the k seeds, its t interval (k - 1 degrees of freedom) and on how many
seeds it is > 0, < 0.

Depth 0 puts the asked needle first in the haystack, farthest from the
question; depth 1 right before it.

    /usr/bin/python3 scripts/repro_depths.py results/repro/NAME.depths.csv|build/repro/NAME.db \
        --length 192 [--groups 0,0.2/0.4,0.6,0.8/1] [--task needle] [--against rope] [--counts CSV]

--task: the task (a prefix of its label) whose depths are read; by default the
one task that has depths at that length.

--groups: depths joined by ',' into a group, groups separated by '/'; default
every depth on its own. --against names a method label exactly (with or
without its ' @model'), or a part of exactly one. Standard library only; exit 2 on bad input.
"""
import argparse
import csv
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from repro_intervals import across, wilson  # noqa: E402  (the same intervals as the snapshots')


def fail(msg, hint=None):
    sys.stderr.write(f"repro_depths: {msg}\n" + (f"  hint: {hint}\n" if hint else ""))
    sys.exit(2)


def read_db(db, length, task):
    """[(method, seed, depth, fraction right, n_samples, task)] of the cells at length."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    return con.execute(
        "select r.method, r.seed, s.x, s.y, (select value from metrics m where m.run_id = r.id"
        " and m.name = 'n_samples'), r.task from series s join runs r on r.id = s.run_id"
        " where s.series = 'acc_by_depth' and r.length = ? and r.task like ? || '%'", (length, task)).fetchall()


def read_csv(path, counts, length, task):
    """The same rows from a series snapshot and the metrics snapshot beside it."""
    counts = counts or path.replace(".depths.csv", ".csv")
    if counts == path or not os.path.exists(counts):
        fail(f"no metrics snapshot {counts} for the counts of {path}", "name it with --counts")
    n = {}
    with open(counts, newline="") as f:
        for r in csv.DictReader(f):
            if r["metric"] == "n_samples":
                n[(r["method"], r["task"], r["length"], r["seed"])] = float(r["value"])
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["series"] != "acc_by_depth" or r["length"] != str(length) or not r["task"].startswith(task):
                continue
            key = (r["method"], r["task"], r["length"], r["seed"])
            if key not in n:
                fail(f"{counts} has no n_samples for {key} of {path}")
            rows.append((r["method"], int(r["seed"]), float(r["x"]), float(r["y"]), n[key], r["task"]))
    return rows


def read(source, counts, length, task):
    """{(method, seed): {depth: (right, samples)}} of the cells at length."""
    if not os.path.exists(source):
        fail(f"no store or snapshot {source}", "results/repro/NAME.depths.csv, or a store build/repro/NAME.db")
    rows = read_db(source, length, task) if source.endswith(".db") else read_csv(source, counts, length, task)
    if not rows:
        fail(f"{source}: no acc_by_depth series at length {length}" + (f" for task '{task}'" if task else ""),
             "a retrieval task with depths, at one of the sweep's lengths")
    tasks = sorted({r[5].split("(")[0] for r in rows})
    if len(tasks) > 1:      # without --task: the one task with depths there, or say which there are
        fail(f"{source}: tasks {', '.join(tasks)} have depths at length {length}", "name one with --task")
    cells = {}
    for method, seed, x, y, n, _ in rows:
        cells.setdefault((method, seed), {})[x] = (y, n)
    out = {}
    for key, at in cells.items():
        per = round(at[next(iter(at))][1] / len(at))       # samples at each depth
        out[key] = {x: (round(y * per), per) for x, (y, _) in at.items()}
    return out


def parse_groups(text, depths):
    if not text:
        return [[d] for d in depths]
    groups = []
    for part in text.split("/"):
        try:
            g = [float(v) for v in part.split(",")]
        except ValueError:
            fail(f"--groups: '{part}' is not a list of depths", "e.g. 0,0.2/0.4,0.6,0.8/1")
        for v in g:
            if not any(abs(v - d) < 1e-9 for d in depths):
                fail(f"--groups: depth {v} is not in the grid", "the cells' depths: " + ", ".join(map(str, depths)))
        groups.append(g)
    return groups


def count(at, group):
    inside = [kn for x, kn in at.items() if any(abs(x - g) < 1e-9 for g in group)]
    return sum(k for k, _ in inside), sum(n for _, n in inside)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("--length", type=int, required=True)
    ap.add_argument("--task", default="")     # the one task with depths at the length
    ap.add_argument("--groups", default="")
    ap.add_argument("--against", default="")
    ap.add_argument("--counts", default="")
    a = ap.parse_args()
    cells = read(a.source, a.counts, a.length, a.task)
    methods = sorted({m for m, _ in cells})
    seeds = sorted({s for _, s in cells})
    depths = sorted({x for at in cells.values() for x in at})
    groups = parse_groups(a.groups, depths)
    base = None
    if a.against:
        hits = ([m for m in methods if a.against in (m, m.split(" @")[0])]
                or [m for m in methods if a.against in m])
        if len(hits) != 1:
            fail(f"--against '{a.against}' names {len(hits)} methods", "one of: " + "; ".join(methods))
        base = hits[0]
    print(f"| method | depths | right, seeds {'+'.join(map(str, seeds))} | pooled [Wilson 95 %] |"
          + (f" minus {base}, paired by seed [t 95 %] |" if base else ""))
    print("|---|---|---:|---:|" + ("---:|" if base else ""))
    def per_seed(m, g):
        return [count(cells[(m, s)], g) if (m, s) in cells else None for s in seeds]
    base_per = [per_seed(base, g) if base else None for g in groups]
    for m in methods:
        for g, bp in zip(groups, base_per):
            per = per_seed(m, g)
            have = [p for p in per if p]
            right, total = sum(k for k, _ in have), sum(n for _, n in have)
            lo, hi = wilson(right, total)
            row = (f"| {m} | {','.join(f'{d:g}' for d in g)} | {'+'.join(str(p[0]) if p else '-' for p in per)} "
                   f"| {right}/{total} [{lo:.2f}, {hi:.2f}] |")
            if base:
                diffs = [p[0] - b[0] for p, b in zip(per, bp) if p and b]
                mean, dlo, dhi = across(diffs)
                inter = f" [{dlo:+.1f}, {dhi:+.1f}]" if dlo is not None else ""
                up, down = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
                row += f" {mean:+.1f}{inter}; {up} up, {down} down |" if m != base else " |"
            print(row)


if __name__ == "__main__":
    main()
