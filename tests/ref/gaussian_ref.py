#!/usr/bin/env python3
"""Independent numpy reference for the `gaussian` task (tasks/gaussian.c).

What it is: the attention statistics of IID Gaussian logits from Anson, Wang,
Aitchison, "Scale-invariant attention" (arXiv 2505.17083, Sec. 3.1-3.2),
computed from the paper's formulas with numpy's own generator, sharing no code
or random stream with lenx. tests/test_gaussian.c checks that lenx's means
agree with these within 3 combined standard errors.

One query attends to keys t = 0..N-1 (t = distance back from the query). Base
logits S_t are IID N(0, sigma^2); each method gives the final logits L_t:

  none                         L_t = S_t
  logn(mode=ssmax,s=0.4)       L_t = s ln(N) S_t                        (SSMax)
  scaleinv(tau=10)             L_t = a_t S_t + m_t,
                               a_t^2 = 1 + 2 ln(1 + t/tau), m_t = -2 ln(1 + t/tau)
                               (alpha = beta = e^0.5)
  scaleinv(tau=10)+infoscale   L_t = kappa(N) (a_t S_t + m_t),
                               kappa(n)^2 = (1 - n^(-2/d)) / (1 - L_tr^(-2/d)),
                               d = 64, L_tr = 64

Metrics of one row (softmax p over all N keys):
  entropy                -sum p log p
  local_mass             sum_{t < 100} p_t
  range_entropy:t1-t2    entropy of p restricted to [t1, t2) and renormalised
  range_mass:t1-t2       sum_{t1 <= t < t2} p_t
  range_z:t1-t2          sum_{t1 <= t < t2} exp(L_t)        (unnormalised)
Ranges are reported only when t2 <= N. Each metric is averaged over `samples`
rows; se = sample sd (ddof=1) / sqrt(samples).

Output: CSV on stdout, columns method,length,metric,mean,se, numbers as repr();
a method containing a comma is double-quoted (RFC 4180).
Regenerate (from the repository root; takes a few seconds):

    /usr/bin/python3 tests/ref/gaussian_ref.py > tests/ref/gaussian_ref.csv
"""
import csv
import sys

import numpy as np

SEED = 12345
SIGMA = 1.0
SAMPLES = 2000
LENGTHS = [100, 1000, 10000]
RANGES = [(10, 100), (100, 1000)]
LOCAL = 100
S_SSMAX = 0.4
TAU = 10.0
D_HEAD = 64
TRAIN_LEN = 64
CHUNK = 200          # rows per block, to bound memory at N = 10000


def kappa(n):
    return np.sqrt((1.0 - n ** (-2.0 / D_HEAD)) / (1.0 - TRAIN_LEN ** (-2.0 / D_HEAD)))


def scaleinv_am(N):
    t = np.arange(N, dtype=np.float64)
    log_term = np.log1p(t / TAU)
    return np.sqrt(1.0 + 2.0 * log_term), -2.0 * log_term


# Each method: (name, function from (S block, N) to L block).
def m_none(S, N):
    return S


def m_logn(S, N):
    return S_SSMAX * np.log(N) * S


def m_scaleinv(S, N):
    a, m = scaleinv_am(N)
    return a * S + m


def m_scaleinv_infoscale(S, N):
    a, m = scaleinv_am(N)
    return kappa(N) * (a * S + m)


METHODS = [
    ("none", m_none),
    ("logn(mode=ssmax,s=0.4)", m_logn),
    ("scaleinv(tau=10)", m_scaleinv),
    ("scaleinv(tau=10)+infoscale", m_scaleinv_infoscale),
]


def logsumexp(L):
    mx = L.max(axis=1, keepdims=True)
    return (mx + np.log(np.exp(L - mx).sum(axis=1, keepdims=True)))[:, 0]


def entropy(L):
    """Entropy of softmax(L) along axis 1, as -sum p log p."""
    logp = L - logsumexp(L)[:, None]
    p = np.exp(logp)
    return -(p * logp).sum(axis=1)


def row_metrics(L, N):
    """(names, (rows, n_metrics) values) for a block of final logits L."""
    lse = logsumexp(L)
    p = np.exp(L - lse[:, None])
    names = ["entropy", "local_mass"]
    cols = [entropy(L), p[:, :min(LOCAL, N)].sum(axis=1)]
    for t1, t2 in RANGES:
        if t2 > N:
            continue
        r = f"{t1}-{t2}"
        names += [f"range_entropy:{r}", f"range_mass:{r}", f"range_z:{r}"]
        cols += [entropy(L[:, t1:t2]), p[:, t1:t2].sum(axis=1), np.exp(L[:, t1:t2]).sum(axis=1)]
    return names, np.stack(cols, axis=1)


def main():
    rng = np.random.default_rng(SEED)
    out = csv.writer(sys.stdout, lineterminator="\n")     # quotes the methods with commas
    out.writerow(["method", "length", "metric", "mean", "se"])
    results = {}        # (method, N) -> (names, values (SAMPLES, k))
    for N in LENGTHS:
        blocks = {name: [] for name, _ in METHODS}
        names_of = {}
        for start in range(0, SAMPLES, CHUNK):
            rows = min(CHUNK, SAMPLES - start)
            # Every method sees the same draws (as in lenx; not required).
            S = SIGMA * rng.standard_normal((rows, N))
            for name, f in METHODS:
                names_of[name], vals = row_metrics(f(S, N), N)
                blocks[name].append(vals)
        for name, _ in METHODS:
            results[(name, N)] = (names_of[name], np.concatenate(blocks[name], axis=0))
    for name, _ in METHODS:
        for N in LENGTHS:
            names, vals = results[(name, N)]
            mean = vals.mean(axis=0)
            se = vals.std(axis=0, ddof=1) / np.sqrt(vals.shape[0])
            for k, metric in enumerate(names):
                out.writerow([name, N, metric, repr(float(mean[k])), repr(float(se[k]))])


if __name__ == "__main__":
    main()
