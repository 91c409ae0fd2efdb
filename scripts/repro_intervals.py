#!/usr/bin/env python3
"""scripts/repro_intervals.py - within-cell 95 % intervals of a tidy snapshot.

Reads a tidy CSV (`lenx table --format csv`, e.g. results/repro/NAME.csv) and
prints, per (method, task, length, seed, metric), the value, the count behind
it and its 95 % interval, as one Markdown table:

* an accuracy whose cell stores its instance count (`acc` with `n_samples`,
  or with `n_masked` on mlm): the Wilson score interval of round(acc*n)
  correct out of n (the interval results/seeds.c widens a seed interval to);
* a metric with a finite `<metric>_se` row: value +- 1.96 se;
* `ppl` with a finite `nll_se` (its se across windows): exp(nll +- 1.96 nll_se);
* anything else: no interval ("none stored", e.g. answer_logprob, js_train,
  or nll_se = nan for a cell of one window).

These are within-cell intervals: what the instances or windows of ONE run say
about that trained model. They say nothing about another training seed; with
several seeds `lenx table` shows the interval across seeds
(docs/results.md#intervals-over-seeds). lenx itself prints one seed's stored
`+- se`, not a Wilson interval, and reads a store, not a CSV; hence this script.

--against METHOD adds, for every other method's cell at the same task, length,
seed and metric, the difference from METHOD's cell, its 95 % interval and z:
value - base with se sqrt(se1^2 + se2^2) (for an accuracy, the binomial
sqrt(p(1-p)/n) of each side), and for ppl the ratio ppl/base with interval
exp(dnll +- 1.96 sqrt(se1^2 + se2^2)). The two sides are taken as independent;
the methods of a sweep usually read the same windows or instances, for which
a paired interval would be narrower, so this one is conservative. "holds"
needs the interval of the difference to exclude 0 (ratio: 1). METHOD is a
part of a method label ('rope @needler' or 'rope': without ' @', on each
cell's own model); where it is a part of
several labels, the one that is exactly METHOD, with or without its ' @model',
is meant (`--against nope` beside `nope+t5align(...)`), and otherwise the
labels are listed.

--seeds pools each (method, task, length, metric) over the seeds the snapshot
holds, as `lenx table` does (docs/results.md#intervals-over-seeds): the mean
of the k per-seed values, the values themselves, and the t interval across
seeds, mean +- t(0.975; k - 1) sd / sqrt(k); for an accuracy with its
instance count, also the Wilson interval of the instances pooled over the
seeds (sum of correct of sum of n). With --against, the difference is paired
by seed (each seed's value minus the same seed's --against value; ppl: the
ratio, from the nll differences) and gets the t interval of the k
differences, and how many of them are > 0.

Several snapshots are read as one: a sweep that extends another with more
seeds on the same cells (finetune-rescaling beside finetune-retrieval) is
pooled with it by naming both. A value that two files give differently for
the same (method, task, length, seed, metric) is an error naming both.

    /usr/bin/python3 scripts/repro_intervals.py results/repro/NAME.csv [MORE.csv ...] \
        [--metric acc,nll] [--method rope,yarn] [--task needle] [--length 768] \
        [--against 'rope @needler'] [--seeds]

--metric, --method and --task take comma-separated lists; a metric matches
itself and its ':'-suffixed variants (range_mass matches range_mass:10-100),
a method or task matches by substring; --length takes exact lengths.
Standard library only; reads the CSV, writes stdout. Exit 2 on bad input.
"""
import argparse
import csv
import math
import sys

Z = 1.959963984540054       # the standard normal's 0.975 quantile
T975 = [math.nan, 12.7062, 4.30265, 3.18245, 2.77645, 2.57058, 2.44691, 2.36462, 2.30600, 2.26216,
        2.22814, 2.20099, 2.17881, 2.16037, 2.14479, 2.13145, 2.11991, 2.10982, 2.10092, 2.09302,
        2.08596, 2.07961, 2.07387, 2.06866, 2.06390, 2.05954, 2.05553, 2.05183, 2.04841, 2.04523,
        2.04227]                # Student's t 0.975 quantiles, 1..30 degrees of freedom (results/seeds.c)
HEADER = ["sweep", "method", "task", "length", "seed", "metric", "value"]
COUNTS = ("n_samples", "n_masked")      # the instance counts of an accuracy
SIZES = COUNTS + ("n_tokens", "rows")   # shown in the n column when stored


def fail(msg, hint=None):
    sys.stderr.write(f"repro_intervals: {msg}\n" + (f"  hint: {hint}\n" if hint else ""))
    sys.exit(2)


def number(text, where):
    try:
        return float(text)
    except ValueError:
        fail(f"{where}: value '{text}' is not a number")


def read_all(paths):
    """read_cells of each path, merged: a cell's metric given twice must agree."""
    cells, sweeps, origin = {}, set(), {}
    for path in paths:
        more, names = read_cells(path)
        sweeps |= names
        for key, metrics in more.items():
            have = cells.setdefault(key, {})
            for metric, v in metrics.items():
                if metric in have and not (have[metric] == v or (math.isnan(v) and math.isnan(have[metric]))):
                    fail(f"{path}: {metric} of ({', '.join(map(str, key))}) is {v:g}, "
                         f"{origin[key]} gives {have[metric]:g}",
                         "pool snapshots of the same cells only where they agree (the same run keys)")
                have[metric] = v
            origin.setdefault(key, path)
    return cells, sweeps


def read_cells(path):
    """{(method, task, length, seed): {metric: value}} in file order, and the sweep names."""
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}", "give a tidy CSV such as results/repro/t5-alignment.csv")
    cells, sweeps = {}, set()
    with f:
        rows = csv.reader(f)
        head = next(rows, [])
        if head[:len(HEADER)] != HEADER:
            fail(f"{path}:1: header is '{','.join(head)}'",
                 "expected the tidy header of lenx table --format csv: " + ",".join(HEADER) + ",model_key,key")
        for i, r in enumerate(rows, start=2):
            if len(r) < len(HEADER):
                fail(f"{path}:{i}: {len(r)} fields, expected at least {len(HEADER)}")
            sweep, method, task, length, seed, metric, value = r[:len(HEADER)]
            sweeps.add(sweep)
            key = (method, task, int(number(length, f"{path}:{i}")), seed)
            cells.setdefault(key, {})[metric] = number(value, f"{path}:{i}")
    if not cells:
        fail(f"{path} holds no rows")
    return cells, sweeps


def finite(x):
    return x is not None and math.isfinite(x)


def wilson(k, n):
    p, z2 = k / n, Z * Z
    d = 1 + z2 / n
    centre, half = (p + z2 / (2 * n)) / d, Z / d * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


def interval(m, metric):
    """(lo, hi, basis, se, scale) of one metric of a cell: scale 'add' or 'log' (se on ln value)."""
    v = m[metric]
    count = next((c for c in COUNTS if metric == "acc" and finite(m.get(c))), None)
    if count and m[count] > 0:
        n = m[count]
        k = round(v * n)
        lo, hi = wilson(k, n)
        return lo, hi, f"Wilson {k}/{n:g}", math.sqrt(v * (1 - v) / n), "add"
    se = m.get(metric + "_se")
    if finite(se):
        return v - Z * se, v + Z * se, "±1.96 se", se, "add"
    if metric == "ppl" and finite(m.get("nll_se")) and finite(m.get("nll")):
        se = m["nll_se"]
        return math.exp(m["nll"] - Z * se), math.exp(m["nll"] + Z * se), "exp(nll ± 1.96 nll_se)", se, "log"
    return None, None, "none stored", None, None


def fmt(x):
    if x is None:
        return "—"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.6g}"


def size(m, metric):
    names = COUNTS if metric == "acc" else SIZES
    return next((f"{m[s]:g} {s}" for s in names if finite(m.get(s))), "")


def wanted(items, pick, match):
    return not pick or any(match(item, p) for item in items for p in pick)


def select(cells, args):
    metric_ok = lambda name, p: name == p or name.startswith(p + ":")
    out = []
    for (method, task, length, seed), m in cells.items():
        if not (wanted([method], args.method, lambda a, p: p in a) and wanted([task], args.task, lambda a, p: p in a)
                and (not args.length or length in args.length)):
            continue
        for metric in m:
            if metric.endswith("_se") or metric in SIZES or not wanted([metric], args.metric, metric_ok):
                continue
            out.append(((method, task, length, seed), metric))
    return out


def check_filters(cells, args, picked):
    if picked:
        return
    methods = sorted({k[0] for k in cells})
    metrics = sorted({x for m in cells.values() for x in m if not x.endswith("_se")})
    fail("the filters select nothing",
         "methods: " + "; ".join(methods) + "\n  metrics: " + ", ".join(metrics))


def base_of(cells, against, key, metric):
    """The --against method's cell at the same task, length and seed, or None."""
    named = [k for k in cells if against in k[0] and k[1:] == key[1:]]
    if " @" not in against and " @" in key[0]:     # a stack alone: on the cell's own model, not another's
        named = [k for k in named if k[0].endswith(key[0][key[0].rindex(" @"):])]
    exact = [k for k in named if against in (k[0], k[0].split(" @")[0])]
    if len(named) > 1 and len(exact) == 1:  # `nope` beside `nope+t5align(...)`: the label that is the name,
        named = exact                       # also where it lacks the metric (a t5align-only one): no difference
    hits = [k for k in named if metric in cells[k]]
    if len(hits) > 1:
        fail(f"--against '{against}' matches {len(hits)} methods at {key[1]}, length {key[2]}",
             "give more of the method label: " + "; ".join(k[0] for k in hits))
    return hits[0] if hits else None


def difference(cells, key, base, metric):
    """(diff, lo, hi, z) of key's cell against base's: additive, or a ratio for ppl."""
    a, b = interval(cells[key], metric), interval(cells[base], metric)
    if a[3] is None or b[3] is None:
        return None
    se = math.sqrt(a[3] ** 2 + b[3] ** 2)
    if a[4] == "log":
        d = cells[key]["nll"] - cells[base]["nll"]
        return math.exp(d), math.exp(d - Z * se), math.exp(d + Z * se), (d / se if se > 0 else math.nan)
    d = cells[key][metric] - cells[base][metric]
    return d, d - Z * se, d + Z * se, (d / se if se > 0 else math.nan)


def table_row(cells, key, metric, against):
    """The printed fields of one metric of one cell (and its difference from --against)."""
    m = cells[key]
    lo, hi, basis, _, scale = interval(m, metric)
    row = [key[0], key[1], str(key[2]), key[3], metric, fmt(m[metric]), size(m, metric),
           f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None else "—", basis]
    if against:
        base = base_of(cells, against, key, metric)
        d = difference(cells, key, base, metric) if base and base != key else None
        row += [("×" if scale == "log" else "") + fmt(d[0]), f"[{fmt(d[1])}, {fmt(d[2])}]", f"{d[3]:.2f}"] \
            if d else ["", "", ""]
    return row


def t975(df):
    """Student's t 0.975 quantile: the table to 30 degrees of freedom, the normal's beyond (off by < 0.05)."""
    return T975[df] if df < len(T975) else Z + (Z ** 3 + Z) / (4 * df)


def across(values):
    """(mean, lo, hi) of values: the t interval of their mean, (mean, None, None) for one value."""
    k = len(values)
    mean = sum(values) / k
    if k < 2:
        return mean, None, None
    half = t975(k - 1) * math.sqrt(sum((v - mean) ** 2 for v in values) / (k - 1) / k)
    return mean, mean - half, mean + half


def by_seed(cells, key, metric):
    """{seed: cell} of the cells at key's method, task and length that store metric."""
    return {k[3]: m for k, m in cells.items() if k[:3] == key[:3] and metric in m}


def seed_order(seed):
    return (0, int(seed), "") if seed.lstrip("-").isdigit() else (1, 0, seed)


def seeds_row(cells, key, metric, against):
    """The printed fields of one metric pooled over the seeds of key's cell (and its paired difference)."""
    group = by_seed(cells, key, metric)
    seeds = sorted(group, key=seed_order)
    mean, lo, hi = across([group[s][metric] for s in seeds])
    if metric == "acc" and lo is not None:     # a share of instances: the t interval stops at 0 and 1, as lenx's
        lo, hi = max(0.0, lo), min(1.0, hi)
    count = next((c for c in COUNTS if metric == "acc" and all(finite(group[s].get(c)) for s in seeds)), None)
    pooled = ""
    if count:
        k = sum(round(group[s][metric] * group[s][count]) for s in seeds)
        n = sum(group[s][count] for s in seeds)
        wlo, whi = wilson(k, n)
        pooled = f"{k}/{n:g} [{fmt(wlo)}, {fmt(whi)}]"
    row = [key[0], key[1], str(key[2]), metric, fmt(mean), " / ".join(fmt(group[s][metric]) for s in seeds),
           f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None else "—", pooled]
    if against:
        base = base_of(cells, against, key, metric)
        row += paired(group, by_seed(cells, base, metric), metric) if base and base[0] != key[0] else ["", "", "", ""]
    return row


def paired(group, base, metric):
    """Mean, per-seed values, t interval and sign count of the per-seed differences group - base."""
    seeds = sorted(set(group) & set(base), key=seed_order)
    if not seeds:
        return ["", "", "", ""]
    log = metric == "ppl" and all(finite(group[s].get("nll")) and finite(base[s].get("nll")) for s in seeds)
    d = [group[s]["nll"] - base[s]["nll"] if log else group[s][metric] - base[s][metric] for s in seeds]
    mean, lo, hi = across(d)
    show = (lambda x: "×" + fmt(math.exp(x))) if log else fmt
    interval = f"[{show(lo)}, {show(hi)}]" if lo is not None else "—"
    return [show(mean), " / ".join(show(x) for x in d), interval, f"{sum(x > 0 for x in d)} of {len(d)}"]


def print_seeds(cells, picked, against):
    seeds = sorted({k[3] for k, _ in picked}, key=seed_order)
    print(f"seeds {', '.join(seeds)}: mean over seeds, 95 % t interval across seeds"
          "; accuracies also pooled over the seeds' instances (Wilson)\n")
    cols = ["method", "task", "length", "metric", "mean", "per seed", "95 % across seeds", "pooled (Wilson)"]
    if against:
        cols += ["vs " + against + " (paired)", "per seed", "95 % across seeds", "> 0"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * 4 + "---:|" * (len(cols) - 4))
    done = set()
    for key, metric in picked:
        if (key[:3], metric) not in done:
            done.add((key[:3], metric))
            print("| " + " | ".join(x.replace("|", "\\|") for x in seeds_row(cells, key, metric, against)) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+", help="tidy CSVs: results/repro/NAME.csv or lenx table --format csv")
    split = lambda s: [x for x in s.split(",") if x]
    ap.add_argument("--metric", type=split, default=[], help="metrics, comma-separated")
    ap.add_argument("--method", type=split, default=[], help="method substrings, comma-separated")
    ap.add_argument("--task", type=split, default=[], help="task substrings, comma-separated")
    ap.add_argument("--length", type=lambda s: [int(x) for x in split(s)], default=[], help="lengths")
    ap.add_argument("--against", help="a method substring: print differences from its cells")
    ap.add_argument("--seeds", action="store_true", help="pool each cell over its seeds: t interval across seeds")
    args = ap.parse_args()
    cells, sweeps = read_all(args.csv)
    picked = select(cells, args)
    check_filters(cells, args, picked)
    if args.seeds:
        print(f"{', '.join(sorted(sweeps))}: ", end="")
        return print_seeds(cells, picked, args.against)
    rows = [table_row(cells, key, metric, args.against) for key, metric in picked]
    seeds = sorted({k[3] for k, _ in picked})
    print(f"{', '.join(sorted(sweeps))}: seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)}; "
          "95 % intervals within each cell (not across seeds)\n")
    cols = ["method", "task", "length", "seed", "metric", "value", "n", "95 % interval", "from"]
    if args.against:
        cols += ["vs " + args.against, "95 % interval", "z"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * 5 + "---:|" * (len(cols) - 5))
    for row in rows:
        print("| " + " | ".join(x.replace("|", "\\|") for x in row) + " |")


if __name__ == "__main__":
    main()
