"""Paired SPRT: a sequential test of a graded measure (MRR, nDCG, ...) for an online A/B
comparison of two retrieval systems, query after query.

Each query gives a paired difference ``d_i = treatment_i - control_i``; Wald's sequential
probability ratio test (Wald 1945) weighs ``H0: mu = 0`` against ``H1: mu = delta`` for
Gaussian differences whose variance is unknown and is profiled out of the likelihood under
each hypothesis:

    LLR_n = (n / 2) * ln(s0 / s1),   s0 = sum d_i^2,   s1 = sum (d_i - delta)^2
                                          = s0 - 2 delta sum d_i + n delta^2,

(``s0 / n`` and ``s1 / n`` are the maximum-likelihood variances under H0 and H1). After each
query: accept the treatment when ``LLR_n >= A = ln((1 - beta) / alpha)``, accept the control
when ``LLR_n <= B = ln(beta / (1 - alpha))``, otherwise take another query. Everything
follows from ``(n, sum d, sum d^2)``, so the state is three numbers that can be stored and
resumed.

The profile likelihood ratio is a *generalized* likelihood ratio: Wald's inequalities
``alpha' <= alpha / (1 - beta)``, ``beta' <= beta / (1 - alpha)`` are proved for simple
hypotheses with a known likelihood, not for it, so its error rates were checked by simulation
(tests/test_sequential.py) and ``min_samples`` (see :class:`SprtSettings`) is what keeps them
at the nominal levels.

References:
    Wald, A. (1945). Sequential tests of statistical hypotheses. Ann. Math. Statist. 16(2),
    117-186. Boundaries A, B and the approximate error rates.
    Wald, A. (1947). Sequential Analysis. Wiley. Composite hypotheses, nuisance parameters.
    Rushton, S. (1950). On a sequential t-test. Biometrika 37(3/4), 326-333. A close relative
    of this test (unknown variance, likelihood ratio of the normal mean).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from recallbench.core._errors import ConfigError

FloatArray = NDArray[np.float64]

Decision = Literal["continue", "accept_treatment", "accept_control", "inconclusive"]

DECISIONS: Final[tuple[Decision, ...]] = (
    "continue",
    "accept_treatment",
    "accept_control",
    "inconclusive",
)
"""Decision names by code: ``DECISIONS[code]`` for the codes :func:`sprt_decisions` returns."""

CONTINUE: Final = 0
ACCEPT_TREATMENT: Final = 1
ACCEPT_CONTROL: Final = 2
INCONCLUSIVE: Final = 3

DEFAULT_MIN_SAMPLES: Final = 50
"""Queries before the SPRT may decide; the choice is explained in :class:`SprtSettings`."""

Differences = float | Sequence[float] | NDArray[np.floating[Any]] | NDArray[np.integer[Any]]

_ROWS_PER_BLOCK_ELEMENTS: Final = 1 << 20
"""sprt_decisions works on blocks of about this many values to bound its memory."""


# --------------------------------------------------------------------------------------------
# Paired SPRT


@dataclass(frozen=True, slots=True)
class SprtSettings:
    """Error rates, effect and sample limits of the paired SPRT.

    ``alpha`` is the type I error (accepting the treatment when ``mu = 0``), ``beta`` the type
    II error (accepting the control when ``mu = effect``), ``effect`` the minimum detectable
    mean difference ``delta > 0``. The log boundaries are Wald's (1945)
    ``upper = ln((1 - beta) / alpha)`` and ``lower = ln(beta / (1 - alpha))``.

    ``min_samples``: no decision before this many queries, because the variance in the LLR is
    estimated, and at small n the estimate is noisy, and with tied (zero) differences it is
    too small, which makes the LLR overconfident. The default 50 comes from simulations
    (alpha 0.05, beta 0.20, delta 0.05, 20,000 streams each):

    * Gaussian differences, sd 0.15: min_samples 2 / 10 / 20 / 50 gives type I error
      0.063 / 0.053 / 0.047 / 0.032 and type II error 0.226 / 0.174 / 0.142 / 0.081.
    * Differences of reciprocal ranks (values in {0, ±1/6, ±1/3, ±1/2, ±2/3, ±1}), 60% ties,
      sd 0.41: type II error 0.500 / 0.226 / 0.209 / 0.193 (type I 0.030-0.048).
    * The same with 80% ties, sd 0.30: type II error 0.731 / 0.363 / 0.273 / 0.199.

    So the type II error exceeds beta until min_samples gives roughly ten non-tied
    differences. 50 keeps both error rates at or below nominal for Gaussian differences and
    60% ties, and at nominal (0.20) for 80% ties, at the cost of a few more queries when the
    differences are not noisy (expected sample size 57 instead of 34 under H0 for the Gaussian
    case; for the tied distributions, whose tests take 100-270 queries, it costs 2-8%). With
    more ties than that, raise it.

    ``max_samples`` truncates the test: reaching it without crossing a boundary gives
    ``"inconclusive"``. Truncation lowers both the error rates and the power.
    """

    alpha: float = 0.05
    beta: float = 0.20
    effect: float = 0.05
    min_samples: int = DEFAULT_MIN_SAMPLES
    max_samples: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError(f"SPRT alpha must be between 0 and 1, got {self.alpha}")
        if not 0.0 < self.beta < 1.0:
            raise ConfigError(f"SPRT beta must be between 0 and 1, got {self.beta}")
        if not self.alpha + self.beta < 1.0:
            raise ConfigError(
                f"SPRT alpha + beta must be below 1, got {self.alpha} + {self.beta}"
                " (the boundaries would cross)"
            )
        if not (math.isfinite(self.effect) and self.effect > 0.0):
            raise ConfigError(f"SPRT effect must be a positive number, got {self.effect}")
        if not is_int(self.min_samples) or self.min_samples < 2:
            raise ConfigError(f"SPRT min_samples must be an integer >= 2, got {self.min_samples}")
        if self.max_samples is not None and (
            not is_int(self.max_samples) or self.max_samples < self.min_samples
        ):
            raise ConfigError(
                f"SPRT max_samples must be None or an integer >= min_samples"
                f" ({self.min_samples}), got {self.max_samples}"
            )

    @property
    def upper(self) -> float:
        """``A = ln((1 - beta) / alpha)``: accept the treatment when ``LLR >= A``."""
        return math.log((1.0 - self.beta) / self.alpha)

    @property
    def lower(self) -> float:
        """``B = ln(beta / (1 - alpha))``: accept the control when ``LLR <= B``."""
        return math.log(self.beta / (1.0 - self.alpha))


@dataclass(frozen=True, slots=True)
class SprtState:
    """Sufficient statistics of the paired SPRT: ``n``, ``sum d`` and ``sum d^2``.

    Immutable: :meth:`update` returns a new state. The sums are accumulated strictly in order
    (not pairwise), so splitting a stream into batches never changes a bit of the result, and
    :func:`sprt_decisions` reproduces :class:`PairedSPRT` exactly. Reordering observations
    changes the sums only by rounding.
    """

    n: int = 0
    total: float = 0.0
    total_squares: float = 0.0

    def __post_init__(self) -> None:
        if not is_int(self.n) or self.n < 0:
            raise ConfigError(f"SPRT state n must be a non-negative integer, got {self.n}")
        if not (math.isfinite(self.total) and math.isfinite(self.total_squares)):
            raise ConfigError("SPRT state sums must be finite")
        if self.total_squares < 0.0:
            raise ConfigError(f"SPRT state total_squares must be >= 0, got {self.total_squares}")
        if self.n == 0 and (self.total != 0.0 or self.total_squares != 0.0):
            raise ConfigError("SPRT state with n = 0 must have zero sums")

    def update(self, differences: Differences) -> SprtState:
        """The state after also observing ``differences`` (one value or a 1-d sequence)."""
        values = _as_differences(differences)
        if values.size == 0:
            return self
        _, total, squares = _paths(self, values)
        return SprtState(self.n + int(values.size), float(total[-1]), float(squares[-1]))

    def llr(self, effect: float) -> float:
        """``LLR_n = (n / 2) ln(s0 / s1)`` for ``H1: mu = effect`` (module docstring).

        0 for ``n = 0``; ``-inf`` when every difference is 0 (``s0 = 0``) and ``+inf`` when
        every difference equals ``effect`` (``s1 = 0``); both cannot be 0 as ``effect > 0``.
        """
        if not (math.isfinite(effect) and effect > 0.0):
            raise ConfigError(f"SPRT effect must be a positive number, got {effect}")
        value = _llr(
            np.array([self.n], dtype=np.float64),
            np.array([self.total]),
            np.array([self.total_squares]),
            effect,
        )
        return float(value[0])

    def to_dict(self) -> dict[str, float | int]:
        """JSON-ready form; floats round-trip exactly through ``json``."""
        return {"n": self.n, "total": self.total, "total_squares": self.total_squares}

    @classmethod
    def from_dict(cls, data: Mapping[str, float | int]) -> SprtState:
        """Inverse of :meth:`to_dict`."""
        try:
            n, total, squares = data["n"], data["total"], data["total_squares"]
        except KeyError as missing:
            raise ConfigError(f"SPRT state is missing {missing}") from None
        if isinstance(n, float) and n.is_integer():
            n = int(n)
        if not isinstance(n, int):
            raise ConfigError(f"SPRT state n must be an integer, got {n!r}")
        return cls(n=n, total=float(total), total_squares=float(squares))


class PairedSPRT:
    """The paired SPRT as a running test: settings plus state plus the decision taken.

    :meth:`update` consumes observations one by one and stops at the first boundary crossing
    (at or after ``min_samples``): the state then holds exactly the observations up to the
    crossing, and later observations are ignored so the decision stays. A ``state`` given to
    the constructor (e.g. restored with :meth:`SprtState.from_dict`) is judged as it is: if it
    is already past a boundary or at ``max_samples``, the test starts decided.
    """

    __slots__ = ("_decision", "_settings", "_state")

    def __init__(self, settings: SprtSettings | None = None, state: SprtState | None = None):
        self._settings = settings if settings is not None else SprtSettings()
        self._state = state if state is not None else SprtState()
        self._decision: Decision = "continue"
        if self._state.n > 0:
            n = np.array([[self._state.n]], dtype=np.float64)
            llr = np.array([[self.llr]])
            code, _ = _decide(n, llr, self._settings)
            self._decision = DECISIONS[int(code[0])]

    @property
    def settings(self) -> SprtSettings:
        return self._settings

    @property
    def state(self) -> SprtState:
        return self._state

    @property
    def decision(self) -> Decision:
        return self._decision

    @property
    def n(self) -> int:
        """Observations used (up to and including the one that decided)."""
        return self._state.n

    @property
    def llr(self) -> float:
        """The log-likelihood ratio of the observations used."""
        return self._state.llr(self._settings.effect)

    def update(self, differences: Differences) -> Decision:
        """Observe ``differences`` in order; return the decision after them."""
        if self._decision != "continue":
            return self._decision  # decided: later observations change nothing
        values = _as_differences(differences)
        if self._settings.max_samples is not None:
            values = values[: self._settings.max_samples - self._state.n]
        if values.size == 0:
            return self._decision
        n, total, squares = _paths(self._state, values)
        llr = _llr(n, total, squares, self._settings.effect)
        codes, stops = _decide(n[np.newaxis], llr[np.newaxis], self._settings)
        code, last = int(codes[0]), int(stops[0])
        if code == CONTINUE:
            last = values.size - 1
        self._state = SprtState(int(n[last]), float(total[last]), float(squares[last]))
        self._decision = DECISIONS[code]
        return self._decision

    def __repr__(self) -> str:
        return (
            f"PairedSPRT(decision={self._decision!r}, n={self.n}, llr={self.llr:.4g},"
            f" bounds=({self._settings.lower:.4g}, {self._settings.upper:.4g}))"
        )


def sprt_decisions(
    streams: FloatArray, settings: SprtSettings | None = None
) -> tuple[NDArray[np.int8], NDArray[np.int64]]:
    """Run the paired SPRT on each row of ``streams`` (m streams × N observations) at once.

    For simulation: running sums along each row give the LLR after every observation. Returns
    the decision codes (index into :data:`DECISIONS`) and the number of observations used: the
    stopping n, or N for rows still at ``"continue"``. Identical, row by row, to feeding the
    row to a fresh :class:`PairedSPRT`.
    """
    settings = settings if settings is not None else SprtSettings()
    data = np.asarray(streams, dtype=np.float64)
    if data.ndim != 2:
        raise ConfigError(f"streams must be a 2-d array (streams × observations), got {data.shape}")
    if settings.max_samples is not None:
        data = data[:, : settings.max_samples]
    if not np.isfinite(data).all():
        raise ConfigError("differences must be finite numbers")
    rows, length = data.shape
    codes = np.zeros(rows, dtype=np.int8)
    used = np.full(rows, length, dtype=np.int64)
    if length == 0:
        return codes, used
    n = np.arange(1, length + 1, dtype=np.float64)[np.newaxis]
    block = max(1, _ROWS_PER_BLOCK_ELEMENTS // length)
    for start in range(0, rows, block):
        part = data[start : start + block]
        total = np.cumsum(part, axis=1)
        squares = np.cumsum(part * part, axis=1)
        llr = _llr(n, total, squares, settings.effect)
        code, stop = _decide(np.broadcast_to(n, llr.shape), llr, settings)
        codes[start : start + block] = code
        used[start : start + block] = np.where(code == CONTINUE, length, stop + 1)
    return codes, used


def _paths(state: SprtState, values: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Running ``(n, sum d, sum d^2)`` after each of ``values``, continuing from ``state``.

    ``np.add.accumulate`` adds strictly left to right, like ``np.cumsum`` in
    :func:`sprt_decisions` (``0.0 + d == d``), so both paths are bit-identical.
    """
    n = state.n + np.arange(1, values.size + 1, dtype=np.float64)
    total = np.add.accumulate(np.concatenate(([state.total], values)))[1:]
    squares = np.add.accumulate(np.concatenate(([state.total_squares], values * values)))[1:]
    return n, total, squares


def _llr(n: FloatArray, total: FloatArray, squares: FloatArray, effect: float) -> FloatArray:
    """``(n / 2) (ln s0 - ln s1)`` elementwise; the one implementation of the LLR."""
    # s1 from the expansion sum (d - delta)^2 = s0 - 2 delta sum d + n delta^2; rounding can
    # leave a true 0 slightly negative, hence the clip (-> +inf, as for an exact 0).
    alternative = np.maximum(squares - effect * (2.0 * total - n * effect), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = 0.5 * n * (np.log(squares) - np.log(alternative))
    return np.where(n > 0, llr, 0.0)


def _decide(
    n: FloatArray, llr: FloatArray, settings: SprtSettings
) -> tuple[NDArray[np.int8], NDArray[np.int64]]:
    """First stop along each row: the code and the column (0 for rows that continue)."""
    eligible = n >= settings.min_samples
    upper = eligible & (llr >= settings.upper)
    lower = eligible & (llr <= settings.lower)
    stop = upper | lower
    if settings.max_samples is not None:
        stop |= n >= settings.max_samples
    column = np.argmax(stop, axis=1)
    rows = np.arange(stop.shape[0])
    codes = np.full(stop.shape[0], CONTINUE, dtype=np.int8)
    codes[stop[rows, column]] = INCONCLUSIVE
    codes[upper[rows, column]] = ACCEPT_TREATMENT  # a crossing at max_samples still counts
    codes[lower[rows, column]] = ACCEPT_CONTROL
    return codes, column.astype(np.int64)


def _as_differences(differences: Differences) -> FloatArray:
    try:
        values = np.asarray(differences, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"differences must be numbers: {error}") from None
    if values.ndim == 0:
        values = values.reshape(1)
    if values.ndim != 1:
        raise ConfigError(f"differences must be one number or a 1-d sequence, got {values.shape}")
    if not np.isfinite(values).all():
        raise ConfigError("differences must be finite numbers")
    return values


def is_int(value: object) -> bool:
    """An integer that is not a bool (settings and counts given as True are mistakes)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)
