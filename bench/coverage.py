"""How often the share-passed intervals hold the true rate when instances come in families (issue #54; docs/models.md,
"Families: claims from instances"): simulated chapters whose families each draw their pass rate from a beta
distribution (mean `rate`, intra-family correlation `icc`) and their instances from it, and the share of chapters
whose interval holds `rate`, for the reports' clustered interval (results/clustering.py), Wilson's interval taking
the instances as independent, and a percentile bootstrap over families.

    python -m bench.coverage                  # the docs' table: 20,000 chapters per row (about a minute)
    python -m bench.coverage --draws 2000     # what tests/unit/results/test_clustering.py runs

Seeded: the same command prints the same table. Pure arithmetic, no model: the machine's load changes only its time.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from pytest_gotchas.results.clustering import clustered_wilson
from pytest_gotchas.results.stats import wilson

# (families, instances per family, rate, icc): the docs' rows, and independent instances (icc near 0) last
SCENARIOS = ((6, 20, 0.7, 0.2), (10, 10, 0.7, 0.3), (8, 30, 0.5, 0.1), (20, 5, 0.8, 0.2), (5, 20, 0.6, 0.3),
             (10, 10, 0.6, 1e-6))


def chapters(families: int, size: int, rate: float, icc: float, draws: int, seed: int) -> np.ndarray:
    """(draws, families) instances passed: each family's rate from a beta with mean `rate` and correlation `icc`."""
    rng = np.random.default_rng(seed)
    spread = (1 - icc) / icc
    return rng.binomial(size, rng.beta(rate * spread, (1 - rate) * spread, (draws, families)))


def coverage(families: int, size: int, rate: float, icc: float, draws: int, seed: int) -> tuple[float, float]:
    """The share of simulated chapters whose clustered and whose naive (Wilson, independent instances) interval at
    95% holds `rate`."""
    held = naive = 0
    for row in chapters(families, size, rate, icc, draws, seed).tolist():
        found = clustered_wilson([(k, size) for k in row])
        assert found.low is not None and found.high is not None
        held += found.low <= rate <= found.high
        plain = wilson(sum(row), families * size)
        assert plain.low is not None and plain.high is not None
        naive += plain.low <= rate <= plain.high
    return held / draws, naive / draws


def bootstrap_coverage(families: int, size: int, rate: float, icc: float, draws: int, seed: int,
                       resamples: int = 1000) -> float:
    """The same chapters' percentile bootstrap over families (resampled with replacement), 95%."""
    passed = chapters(families, size, rate, icc, draws, seed)
    picks = np.random.default_rng(seed + 1).integers(0, families, (draws, resamples, families))
    shares = passed[np.arange(draws)[:, None, None], picks].sum(axis=2) / (families * size)
    low, high = np.quantile(shares, 0.025, axis=1), np.quantile(shares, 0.975, axis=1)
    return float(np.mean((low <= rate) & (rate <= high)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.coverage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=20_000, help="chapters simulated per row (default 20000)")
    parser.add_argument("--bootstrap-draws", type=int, default=2_000,
                        help="chapters per row for the bootstrap, 1,000 resamples each (default 2000)")
    args = parser.parse_args(argv)
    print("| families x instances, rate, icc | clustered | Wilson, independent | cluster bootstrap |")
    print("|---|---|---|---|")
    for families, size, rate, icc in SCENARIOS:
        clustered, naive = coverage(families, size, rate, icc, args.draws, seed=1)
        boot = bootstrap_coverage(families, size, rate, icc, args.bootstrap_draws, seed=1)
        print(f"| {families} x {size}, {rate:g}, {icc:g} | {clustered:.1%} | {naive:.1%} | {boot:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
