"""Kept as a name: the robust statistics live in :mod:`msdoctor.checks.stats` (the checks use them)."""

from msdoctor.checks.stats import mad, median, sign_test_p, theil_sen

__all__ = ["mad", "median", "sign_test_p", "theil_sen"]
