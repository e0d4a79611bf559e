r"""What a profile transition will cost, before it starts: its evaluations of the collapsed
$U_m(W^G)$ and its gradient (the leapfrog steps of every window's chains) and their time at the
unit cost timed here (:func:`~copyhead_jax.sampling.cost.unit_seconds`).

Per seed and probe: every window's chains take ``n_adapt`` warm-up iterations and then, sampled
until they mix, one round (the fewest) to ``n_iter`` (the cap) iterations, ``n_leap``
evaluations each, over the probe's rows; a profile has ``n_windows`` windows, and up to
``2 extend_by max_extend`` more where its range is extended. A seed measures 2 probes (the
fewest) to ``max_probes``. The whitening Hessians (on at most 64 sequences) and the exact MAP
beside the verdict are left out: the windows' chains are most of the work."""

from __future__ import annotations

import jax.numpy as jnp

from ...config import Config
from ...runner.eta import Estimate
from ...sampling.cost import unit_seconds
from .windows import ProfileSettings

__all__ = ["SMALLER", "profile_estimate"]

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
    t = unit_seconds(cfg, [max(2, min(probes)), max(probes)], energy="marginal", dtype=jnp.float64)
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
