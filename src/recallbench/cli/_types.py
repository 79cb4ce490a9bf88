"""Option types shared by the commands."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.FloatRange):
    """A float option that refuses ``nan`` and ``inf`` (which ``float`` and click's
    ``FloatRange`` let through: ``nan`` compares false with every bound), within optional
    bounds. Every float option uses it, so that a non-number is a usage error naming the
    option, not a traceback or a silent NaN."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


UNIT = FiniteFloat(0, 1, min_open=True, max_open=True)
"""A probability strictly between 0 and 1 (a significance level, a power)."""
POSITIVE = FiniteFloat(0, min_open=True)
"""A number above 0."""
