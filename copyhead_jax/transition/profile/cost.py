r"""What a profile transition will cost, before it starts: its evaluations of the collapsed
$U_m(W^G)$ and its gradient (the leapfrog steps of every window's chains) and their time at the
unit cost timed here (:func:`~copyhead_jax.sampling.cost.unit_seconds`).

Per seed and probe: every window's chains take ``n_adapt`` warm-up iterations and then, sampled
until they mix, one round (the fewest) to ``n_iter`` (the cap) iterations, ``n_leap``
evaluations each, over the probe's rows; a profile has ``n_windows`` windows, and up to
``2 extend_by max_extend`` more where its range is extended. A seed measures 2 probes (the
fewest) to ``max_probes``. The whitening Hessians (on at most 64 sequences) and the exact MAP
beside the verdict are left out: the windows' chains are most of the work.

And what one probe needs in memory (:func:`profile_bytes`), refused before its work when over the
budget (:func:`check_profile_memory`)."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ...config import Config
from ...runner.eta import Estimate
from ...runner.memory import available_bytes, refuse_if_over
from ...sampling.cost import unit_seconds
from .windows import ProfileSettings

__all__ = [
    "SMALLER",
    "check_profile_memory",
    "padded_rows",
    "profile_bytes",
    "profile_estimate",
]

#: how to run a smaller profile transition (the configuration's size drives its cost)
SMALLER = (
    "its cost grows with L and P*; a smaller one: copyhead transition --preset plain --L 12 "
    "--V 6 --width inf --n-seeds 1 (or fewer --max-probes, --window-iters)"
)


def profile_estimate(
    cfg: Config,
    s: ProfileSettings,
    *,
    n_seeds: int,
    max_probes: int,
    probes: tuple[int, ...],
    where: str,
) -> Estimate:
    """The windows' evaluations of ``n_seeds`` seeds with first probes ``probes`` (the rows of
    every probe taken as theirs; ``where``: where they came from) and their time."""
    u = s.umbrella
    it_lo = u.n_adapt + (min(u.round_iter, u.n_iter) if u.ess_target else u.n_iter)
    it_hi = u.n_adapt + u.n_iter
    w_lo, w_hi = s.n_windows, s.n_windows + 2 * s.extend_by * s.max_extend
    n_lo = len(probes) if len(probes) >= 2 else 2
    per_probe = u.n_chains * u.n_leap
    # float32: the windows' chains run in it (:func:`.umbrella.run_windows`); float64 timed
    # 1.5-3.6x slower at L = 25, P = 826-1,619
    t = unit_seconds(cfg, [max(2, min(probes)), max(probes)], energy="marginal", dtype=jnp.float32)
    sec = float(sum(t(p) for p in probes) / len(probes))  # a probe's rows: the first ones'
    lo = n_seeds * n_lo * w_lo * per_probe * it_lo
    hi = n_seeds * max(max_probes, n_lo) * w_hi * per_probe * it_hi
    return Estimate(
        f"profile transition L={cfg.task.L} V={cfg.task.V}, {n_seeds} seed(s), "
        f"probes near P = {', '.join(map(str, probes))} ({where})",
        (lo, hi),
        "evaluations of U_m and its gradient",
        (lo * sec, hi * sec),
        f"per seed {n_lo}-{max(max_probes, n_lo)} probes x {w_lo}-{w_hi} windows x "
        f"{u.n_chains} chains x {it_lo}-{it_hi} iterations x {u.n_leap} leapfrog "
        f"steps; one evaluation timed here: {1e3 * sec:.2g} ms",
    )


def profile_bytes(s: ProfileSettings, *, L: int, V: int, P_pad: int) -> int:
    """Peak bytes of one profile at ``P_pad`` rows: one window's chains at a time (the windows
    run in sequence), each an energy and its gradient over the rows (``[P, L, L]`` and
    ``[P, L, D]`` float32, a few copies: the TI groups' count, ``ti_settings.group_bytes``),
    or the float64 whitening Hessian 32 products at a time, whichever is larger; plus every
    window's whitening ``C[n, n]`` (``n = D^2``, the flat ``W^G``; the most windows the range
    extensions allow), one Hessian and its eigenvectors, and the recorded draws."""
    D = V + L
    n = D * D
    act = P_pad * L * (L + D + V) * 4 * 6
    K = s.n_windows + 2 * s.extend_by * s.max_extend
    u = s.umbrella
    chains = 2 * u.n_chains * act
    hess = 2 * 32 * 2 * act
    whiten = 4 * K * n * n + 3 * 8 * n * n
    records = 4 * K * u.n_chains * (u.n_iter // u.thin) * 8
    return max(chains, hess) + whiten + records


def check_profile_memory(cfg: Config, s: ProfileSettings, P: int) -> None:
    """Refuse, before its work, a profile at ``P`` rows over the memory budget."""
    need = profile_bytes(s, L=cfg.task.L, V=cfg.task.V, P_pad=padded_rows(P))
    refuse_if_over(
        need,
        available_bytes(cfg),
        f"a free-energy profile at P = {P} ({s.n_windows} windows x {s.umbrella.n_chains} chains)",
        "use fewer --window-chains or --window-iters, a larger --spacing, a smaller "
        "--L, or a larger --memory-budget-gb",
    )


def padded_rows(P: int) -> int:
    """Rows a problem is padded to: P rounded up to a multiple of 8 (one compiled program
    serves nearby P)."""
    return 8 * math.ceil(P / 8)
