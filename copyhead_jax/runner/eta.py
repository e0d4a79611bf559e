"""What long work will cost, said before it starts: the work counted in its unit (evaluations of
the energy and its gradient, or the theory's configurations), each unit's seconds timed here on
the compiled function (:func:`seconds_per_call`; a host function's run, :func:`seconds_per_run`),
and one progress note naming both (:func:`announce`). Where the count depends on when the work
converges it is a range (the fewest the work can take or typically takes, and its cap); work
estimated to take longer than :data:`LONG_S` is also a :class:`LongWorkWarning` that says how
to run a smaller one."""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from collections.abc import Callable

import jax
import numpy as np

from .._warn import CopyheadWarning

__all__ = [
    "Estimate",
    "LongWorkWarning",
    "announce",
    "duration",
    "seconds_per_call",
    "seconds_per_run",
]

#: Work estimated to take longer than this (its low end, in seconds) is announced as a warning.
LONG_S = 3600.0


class LongWorkWarning(CopyheadWarning):
    """Work estimated (before it starts) to take longer than an hour on this machine."""


@dataclasses.dataclass(frozen=True)
class Estimate:
    """``units`` of work (low, high) of the kind ``unit``, and the ``seconds`` (low, high) they
    take at the costs timed here; ``basis``: how the count and the costs were had."""

    what: str
    units: tuple[float, float]
    unit: str
    seconds: tuple[float, float]
    basis: str

    def line(self) -> str:
        """``WHAT: about N UNIT, about T (BASIS)``, a range where the two ends differ."""
        (u0, u1), (s0, s1) = self.units, self.seconds
        n = _range(_count(u0), _count(u1))
        t = _range(duration(s0), duration(s1))
        return f"estimate: {self.what}: {n} {self.unit}, {t} plus compiling ({self.basis})"


def _range(a: str, b: str) -> str:
    return a if a == b else f"{a} to {b}"


def _count(n: float) -> str:
    return f"{n:,.0f}" if n < 1e6 else f"{n:.3g}"


def duration(s: float) -> str:
    """Seconds as a person reads them: ``40 s``, ``7.5 min``, ``3.2 h``, ``2.1 days``."""
    if not np.isfinite(s):
        return "unknown"
    if s < 90:
        return f"{max(s, 1):.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.1f} min"
    if s < 48 * 3600:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def seconds_per_call(fn, *args, budget_s: float = 0.05, max_calls: int = 20) -> float:
    """Seconds per call of ``jax.jit(fn)(*args)`` on this machine: compiled and run once
    (neither timed), then called until ``budget_s`` is spent (at least 3 calls, at most
    ``max_calls``); the median."""
    f = jax.jit(fn)
    return seconds_per_run(
        lambda: jax.block_until_ready(f(*args)), budget_s=budget_s, max_calls=max_calls
    )


def seconds_per_run(
    fn: Callable[[], object], *, budget_s: float = 0.05, min_calls: int = 3, max_calls: int = 20
) -> float:
    """Seconds per call of ``fn()``, a host function that compiles what it runs on its first
    call (the theory's searches): called once (not timed), then until ``budget_s`` is spent (at
    least ``min_calls`` calls, at most ``max_calls``); the median."""
    fn()
    times: list[float] = []
    end = time.perf_counter() + budget_s
    while len(times) < min_calls or (time.perf_counter() < end and len(times) < max_calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def announce(
    est: Estimate | Callable[[], Estimate],
    logger: str,
    smaller: str | None = None,
    *,
    warn: bool = True,
) -> Estimate | None:
    """``est`` (or what the callable ``est`` returns) as one progress note of ``logger`` (the
    ``copyhead`` command prints it on stderr), and (``warn``) as a :class:`LongWorkWarning`
    (with ``smaller``: how to run less) when its low end is past :data:`LONG_S`; returns it. An
    estimate that fails is a note saying so (``None``): the work goes on without one."""
    if callable(est):
        try:
            est = est()
        except Exception as e:  # noqa: BLE001 - an estimate never stops the work
            logging.getLogger(logger).info(f"no estimate of the work: {type(e).__name__}: {e}")
            return None
    logging.getLogger(logger).info(est.line())
    if warn and est.seconds[0] > LONG_S:
        warnings.warn(
            f"{est.what} will take at least {duration(est.seconds[0])} on this machine "
            f"(estimated before it starts)" + (f"; {smaller}" if smaller else ""),
            LongWorkWarning,
            stacklevel=3,
        )
    return est
