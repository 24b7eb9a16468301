"""How a circuit is scored (--gotchas-patch-edges): its size points and its faithfulness, as the Mechanistic
Interpretability Benchmark scores circuits (MIB, Mueller et al. 2025; its circuit track's run_evaluation.py). Pure.

A circuit of size n is the n edges of highest |EAP-IG score|; the model runs with every other edge reading the
partner's write (scoring/circuits.py). Its faithfulness is (metric(circuit) - metric(empty)) / (metric(full) -
metric(empty)): 1 reproduces the full model, 0 the empty circuit (every edge read from the partner). MIB measures it
at 0.1%, 0.2%, 0.5%, 1%, 2%, 5%, 10%, 20%, 50% and 100% of the edges (int(share * edges) each), and summarises the
curve by two trapezoid areas over those shares (linear in the share, as its code computes them): CPR, the area under
the curve (higher is better), and CMD, the area between the curve and 1 (lower is better). The complement (every
edge but the circuit's reads its own write, the circuit's read the partner's) is measured beside it: a circuit that
carries the behaviour leaves its complement near 0.

A pair's graph has few edges worth naming, so the curve also holds the small sizes 1 to 5, 10, 20 and 50 (those the
graph has); they are shown, and left out of the areas so that the areas stay MIB's.
"""

from __future__ import annotations

from collections.abc import Sequence

MIB_SHARES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
SMALL_SIZES = (1, 2, 3, 4, 5, 10, 20, 50)


def circuit_sizes(count: int) -> list[tuple[int, float | None]]:
    """The curve's points for a graph of ``count`` edges: (size, MIB share or None for a small size), sizes
    ascending; a size that is both keeps its share."""
    mib: list[tuple[int, float | None]] = [(int(share * count), share) for share in MIB_SHARES]
    taken = {size for size, _ in mib}
    small: list[tuple[int, float | None]] = [(n, None) for n in SMALL_SIZES if n <= count and n not in taken]
    return sorted(small + mib, key=lambda point: point[0])


def faithfulness(metric: float, empty: float, full: float) -> float | None:
    """(metric - empty) / (full - empty); None when the full model and the empty circuit agree (nothing to carry)."""
    if full == empty:
        return None
    return (metric - empty) / (full - empty)


def area(shares: Sequence[float], values: Sequence[float | None], from_one: bool = False) -> float | None:
    """MIB's trapezoid area over ``shares`` of ``values`` (CPR), or of |1 - value| (CMD, ``from_one``); None when a
    value is None or there are fewer than two points."""
    if len(shares) < 2 or any(v is None for v in values):
        return None
    ys = [abs(1.0 - v) if from_one else v for v in values if v is not None]
    return sum((shares[k + 1] - shares[k]) * (ys[k] + ys[k + 1]) / 2 for k in range(len(ys) - 1))
