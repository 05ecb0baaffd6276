"""Small robust statistics for the live rules: median, MAD, Theil–Sen slope (no NumPy needed)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return math.nan
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def mad(xs: Sequence[float]) -> float:
    """Median absolute deviation scaled to a standard deviation for normal data (×1.4826)."""
    m = median(xs)
    return 1.4826 * median([abs(x - m) for x in xs])


def theil_sen(xs: Sequence[float], ys: Sequence[float], max_points: int = 150) -> float:
    """Median of pairwise slopes: a straight-line fit that ignores a few outliers (robust)."""
    n = len(xs)
    if n > max_points:
        idx = [round(i * (n - 1) / (max_points - 1)) for i in range(max_points)]
        xs, ys = [xs[i] for i in idx], [ys[i] for i in idx]
        n = max_points
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(n) for j in range(i + 1, n) if xs[j] != xs[i]]
    return median(slopes) if slopes else 0.0


def sign_test_p(k: int, n: int) -> float:
    """One-sided sign test: P(at least ``k`` of ``n`` fair coin flips come up heads)."""
    if n <= 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n
