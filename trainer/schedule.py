"""Learning-rate schedule and dynamic loss scaling, in plain Python so they are exact and testable."""

from __future__ import annotations

import math
from dataclasses import dataclass


def lr_at(step: int, total: int, peak: float, floor: float, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps (step 1 gets peak/warmup), then cosine decay to ``floor``."""
    if warmup > 0 and step <= warmup:
        return peak * step / warmup
    span = max(1, total - warmup)
    progress = min(1.0, max(0.0, (step - warmup) / span))
    return floor + 0.5 * (peak - floor) * (1.0 + math.cos(math.pi * progress))


@dataclass
class DynamicLossScale:
    """Mixed-precision loss scaling: halve on overflow (and skip the update), double after ``window`` clean steps.

    On CPU the trainer runs fp32, where overflow is rare; the scaler still runs so a non-finite
    gradient (the ``nan`` injection, a real divergence) is detected and the update skipped, exactly as
    it would be with fp16 on a device.
    """

    scale: float = 2.0**12
    window: int = 20
    factor: float = 2.0
    min_scale: float = 1.0
    good_steps: int = 0

    def update(self, finite: bool) -> bool:
        """Record one step; returns whether the optimizer may apply it."""
        if not finite:
            self.scale = max(self.min_scale, self.scale / self.factor)
            self.good_steps = 0
            return False
        self.good_steps += 1
        if self.good_steps >= self.window:
            self.scale *= self.factor
            self.good_steps = 0
        return True
