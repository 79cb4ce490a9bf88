"""A running test of the mean of bounded differences: the confidence sequences of
:mod:`recallbench.stats._bounded_cs` fed one difference (or batch) at a time, in constant
memory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import cast

import numpy as np

from recallbench.core._errors import ConfigError
from recallbench.stats._bounded_cs import (
    BoundedCsSettings,
    BoundedPath,
    CsState,
    FloatArray,
    as_unit,
    run_cs,
    state_width,
)
from recallbench.stats._msprt import Values
from recallbench.stats._sprt import Decision


class BoundedCS:
    """The bounded-mean confidence sequence as a running test over a stream of differences.

    Keeps O(1) numbers for the empirical-Bernstein method and two ``grid``-long capital
    vectors for betting, so each difference costs O(1) or O(grid), whatever the length of
    the stream. :meth:`update` returns the decision: ``"accept_treatment"`` when ``p <=
    alpha`` and the treatment bettor won (the interval lies at or above ``null``),
    ``"accept_control"`` when the control bettor won, ``"inconclusive"`` at ``max_samples``,
    else ``"continue"``. Once decided, later differences are ignored.
    """

    __slots__ = ("_decision", "_last", "_settings", "_state")

    def __init__(self, settings: BoundedCsSettings | None = None) -> None:
        self._settings = settings if settings is not None else BoundedCsSettings()
        self._state = CsState.empty(1, state_width(self._settings))
        self._decision: Decision = "continue"
        self._last: BoundedPath | None = None

    @property
    def settings(self) -> BoundedCsSettings:
        return self._settings

    @property
    def decision(self) -> Decision:
        return self._decision

    @property
    def n(self) -> int:
        """Differences used (up to and including the one that decided)."""
        return int(self._state.n[0])

    @property
    def pvalue(self) -> float:
        """The always-valid p-value now (1 before any difference)."""
        return float(self._state.pvalue[0])

    @property
    def interval(self) -> tuple[float, float]:
        """The ``1 - alpha`` confidence sequence for the mean difference now (the running
        intersection; (-1, 1) before any difference)."""
        if self._last is None:
            return (-1.0, 1.0)
        return (float(self._last.lower[0, -1]), float(self._last.upper[0, -1]))

    @property
    def estimate(self) -> float:
        """The sequence's own estimate of the mean difference, always inside :attr:`interval`
        (the CS centre clipped into it; 0 before any difference)."""
        return 0.0 if self._last is None else float(self._last.estimate[0, -1])

    def update(self, differences: float | Values) -> Decision:
        """Observe ``differences`` (in [-1, 1]) in order; return the decision after them."""
        if self._decision != "continue":
            return self._decision
        if np.ndim(differences) > 1:
            raise ConfigError(
                f"differences must be one number or a 1-d sequence: {np.shape(differences)}"
            )
        settings = self._settings
        new = as_unit(np.atleast_1d(differences))
        if settings.max_samples is not None:
            new = new[:, : settings.max_samples - self.n]
        if new.size == 0:
            return self._decision
        path, signed, state = run_cs(new, self._state, settings)
        rejected = path.pvalues[0] <= settings.alpha
        if rejected.any():
            stop = int(np.argmax(rejected))
            if stop < new.shape[1] - 1:  # decided mid-batch: the state must end there
                path, signed, state = run_cs(new[:, : stop + 1], self._state, settings)
            self._decision = "accept_treatment" if signed[0, -1] > 0.0 else "accept_control"
        elif settings.max_samples is not None and int(state.n[0]) >= settings.max_samples:
            self._decision = "inconclusive"
        self._state = state
        self._last = BoundedPath(
            path.pvalues[:, -1:], path.lower[:, -1:], path.upper[:, -1:], path.estimate[:, -1:]
        )
        return self._decision

    def snapshot(self) -> dict[str, FloatArray | str]:
        """Where the test stands, as named arrays (and its decision): :meth:`restore` of it
        continues exactly as this object would (feeding a stream in parts or whole gives the
        same numbers to the bit; ``tests/test_shadow_progress.py``)."""
        found: dict[str, FloatArray | str] = {"decision": self._decision}
        for item in fields(CsState):
            found[f"state.{item.name}"] = getattr(self._state, item.name)
        if self._last is not None:
            for item in fields(BoundedPath):
                found[f"last.{item.name}"] = getattr(self._last, item.name)
        return found

    @classmethod
    def restore(
        cls, settings: BoundedCsSettings, snapshot: Mapping[str, FloatArray | str]
    ) -> BoundedCS:
        """The test :meth:`snapshot` described, under the same ``settings``."""
        restored = cls(settings)
        restored._decision = cast(Decision, str(snapshot["decision"]))
        restored._state = CsState(
            **{item.name: np.asarray(snapshot[f"state.{item.name}"]) for item in fields(CsState)}
        )
        if "last.pvalues" in snapshot:
            restored._last = BoundedPath(
                **{
                    item.name: np.asarray(snapshot[f"last.{item.name}"])
                    for item in fields(BoundedPath)
                }
            )
        return restored

    def __repr__(self) -> str:
        low, high = self.interval
        return (
            f"BoundedCS(method={self._settings.method!r}, decision={self._decision!r},"
            f" n={self.n}, estimate={self.estimate:.4g}, p={self.pvalue:.4g},"
            f" interval=({low:.4g}, {high:.4g}))"
        )
