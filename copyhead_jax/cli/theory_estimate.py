r"""What ``copyhead theory scaling`` and ``copyhead theory landscape`` will cost, said before the
work (:mod:`copyhead_jax.runner.eta`): one configuration (scaling), or one and two P (landscape),
timed here on their compiled programs, times how many the command asks for; one ``estimate:``
note on stderr, and a :class:`~copyhead_jax.runner.eta.LongWorkWarning` past an hour that names a
smaller command.

Scaling: every configuration ``(L, V)`` runs the same searches (a scan of log P and its
k-section rounds, one batch over the configurations), and on a CPU a batch costs about the sum
of its members (:mod:`copyhead_jax.sampling.cost`), so the table costs the configurations times
the table of one configuration (:func:`~copyhead_jax.theory.scaling.scaling_table`). Landscape:
the curve through every P is one program over the P padded to a bucket of 32, 64, ... (its cost
scales with the bucket), then the potential's grid at every P (a fixed cost of its operations
and one per P): the landscape timed at one and at two P gives both. The functions timed are the
commands' own, looked up when called (a stub of the work stands in for them too)."""

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
    from ..theory.scaling import scaling_table

    L0, V0 = int(Ls[0]), int(Vs[0])
    t = _seconds(
        lambda: scaling_table(
            params, L_values=[L0], V_values=[V0], attention=attention, objective=objective
        )
    )
    n = len(Ls) * len(Vs)
    return Estimate(
        f"theory scaling, {len(Ls)} L x {len(Vs)} V ({attention}, {objective})",
        (n, n),
        "configurations",
        (n * t, n * t),
        f"one configuration timed here (L = {L0}, V = {V0}); a batch costs about the "
        "sum of its members",
    )


def landscape_estimate(params, P_by_attention: dict[str, list[float]], objective: str) -> Estimate:
    """The P values of ``theory landscape`` (every attention) and their time: per attention the
    landscape at its first one and at its first two P (the same compiled curve, one more grid:
    a fixed part and a part per P), the curve's part scaled to the bucket of all its P."""
    from ..theory.minima import landscape, theory_curve

    seconds, n = 0.0, 0
    for att, P in P_by_attention.items():
        P1, P2 = [float(P[0])], [float(P[0]), float(P[-1])]
        one = _seconds(lambda att=att, P1=P1: landscape(params, P1, att, objective))
        two = _seconds(lambda att=att, P2=P2: landscape(params, P2, att, objective))
        per_P = max(two - one, 0.0)
        seconds += max(one - per_P, 0.0) + per_P * len(P)
        bucket = max(32, 1 << (len(P) - 1).bit_length())  # theory_curve's padding
        if bucket > 32:  # the curve over more P: its cost grows with the bucket
            curve = _seconds(lambda att=att, P1=P1: theory_curve(params, P1, att, objective))
            seconds += curve * (bucket / 32 - 1)
        n += len(P)
    return Estimate(
        f"theory landscape, {n} P value(s) ({', '.join(P_by_attention)}, {objective})",
        (n, n),
        "P values",
        (seconds, seconds),
        "the landscape at one and at two P timed here",
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
