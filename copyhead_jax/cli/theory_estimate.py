r"""What ``copyhead theory scaling`` and ``copyhead theory landscape`` will cost, said before the
work (:mod:`copyhead_jax.runner.eta`): one configuration (scaling) or one P (landscape) timed here
on its compiled programs, times how many the command asks for; one ``estimate:`` note on stderr,
and a :class:`~copyhead_jax.runner.eta.LongWorkWarning` past an hour that names a smaller command.

Scaling: every configuration ``(L, V)`` runs the same searches (a scan of log P and its
k-section rounds, one batch over the configurations), and on a CPU a batch costs about the sum
of its members (:mod:`copyhead_jax.sampling.cost`), so the table costs the configurations times
one configuration's :func:`~copyhead_jax.theory.points.points_batch`. Landscape: the curve
through every P is one program over the P padded to a bucket of 32, 64, ... (its cost scales
with the bucket) and the potential's grid is evaluated at each P; the landscape at one P, less
the curve at one P, is one grid."""

from __future__ import annotations

from collections.abc import Sequence

from ..runner.eta import Estimate, announce, seconds_per_run

__all__ = ["announce_landscape", "announce_scaling", "landscape_estimate", "scaling_estimate"]

#: how a user asks for less (the warning past an hour says it)
SCALING_SMALLER = "give fewer --L or --V values (a coarser range 'a:b:step')"
LANDSCAPE_SMALLER = "give fewer --P values"


def _seconds(fn) -> float:
    """One run of ``fn()`` on its compiled programs (compiled by a first, untimed call)."""
    return seconds_per_run(fn, min_calls=2, max_calls=5)


def scaling_estimate(
    params, Ls: Sequence[int], Vs: Sequence[int], attention: str, objective: str
) -> Estimate:
    """The configurations of ``theory scaling`` and their time at the first one's."""
    from ..theory.points import points_batch

    first = params.replace(L=int(Ls[0]), V=int(Vs[0]))
    t = _seconds(lambda: points_batch([first], attention, objective))
    n = len(Ls) * len(Vs)
    return Estimate(
        f"theory scaling, {len(Ls)} L x {len(Vs)} V ({attention}, {objective})",
        (n, n),
        "configurations",
        (n * t, n * t),
        f"one configuration timed here (L = {first.L}, V = {first.V}); a batch costs about the "
        "sum of its members",
    )


def landscape_estimate(params, P_by_attention: dict[str, list[float]], objective: str) -> Estimate:
    """The P values of ``theory landscape`` (every attention) and their time: per attention the
    curve at its bucket of P and the grid at every P, each timed at the first P."""
    from ..theory.minima import landscape, theory_curve

    seconds, n = 0.0, 0
    for att, P in P_by_attention.items():
        P0 = [float(P[0])]
        curve = _seconds(lambda att=att, P0=P0: theory_curve(params, P0, att, objective))
        one = _seconds(lambda att=att, P0=P0: landscape(params, P0, att, objective))
        bucket = max(32, 1 << (len(P) - 1).bit_length())  # theory_curve's padding
        seconds += curve * bucket / 32 + max(one - curve, 0.0) * len(P)
        n += len(P)
    return Estimate(
        f"theory landscape, {n} P value(s) ({', '.join(P_by_attention)}, {objective})",
        (n, n),
        "P values",
        (seconds, seconds),
        "the curve and the potential's grid at one P timed here",
    )


def announce_scaling(params, Ls, Vs, attention: str, objective: str) -> None:
    """:func:`scaling_estimate` as a progress note (and a warning past an hour)."""
    announce(
        lambda: scaling_estimate(params, Ls, Vs, attention, objective), __name__, SCALING_SMALLER
    )


def announce_landscape(params, P_by_attention: dict[str, list[float]], objective: str) -> None:
    """:func:`landscape_estimate` as a progress note (and a warning past an hour)."""
    announce(
        lambda: landscape_estimate(params, P_by_attention, objective), __name__, LANDSCAPE_SMALLER
    )
