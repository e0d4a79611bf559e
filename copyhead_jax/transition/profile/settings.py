"""What a profile transition is asked to do (:mod:`.run`): the windows' default placement and
sampling (:func:`default_profile_settings`, :data:`PROFILE_UMBRELLA`) and the probes' search
(:class:`SearchSettings`: first probes, how many per seed, when a bracket is narrow enough)."""

from __future__ import annotations

import dataclasses
import math

from ..._checks import check_int
from ...config import PROFILE_WINDOW
from .softmax import a_bounds
from .umbrella import UmbrellaSettings
from .windows import ProfileSettings

#: The windows' default sampling: in rounds of 100 iterations until every window meets the bar
#: below which the profile flags it (``PROFILE_WINDOW``: ESS >= 50 of a_G and U, split R-hat
#: <= 1.1), at most 1,000 iterations (a window that reaches the cap is flagged): the windows
#: that mix get the old fixed length's 200 iterations or fewer, the slow ones what they need.
PROFILE_UMBRELLA = UmbrellaSettings(
    n_iter=1000,
    ess_target=PROFILE_WINDOW.ess_min,
    rhat_target=PROFILE_WINDOW.rhat_max,
    round_iter=100,
)
#: What a seed's probes refine once one is bimodal (:class:`SearchSettings`).
PLACEMENTS = ("basins", "fixed")
#: The fixed length of windows sampled without a target (``ess_target = 0``).
FIXED_WINDOW_ITERS = 200


def default_profile_settings(L: int, **kw) -> ProfileSettings:
    r"""Windows every 0.15 in $a_G$ from $-0.9\sqrt L/(L-1)$ (near the lower bound
    $-\sqrt L/(L-1)$, no attention on the previous token) to $0.75\sqrt L$, extended where the
    profile has not risen 4 nats (:mod:`.windows`); 6 chains (replicas) per window, sampled
    until they mix (:data:`PROFILE_UMBRELLA`) after 40 iterations of warm-up."""
    base = dict(
        a_lo=round(-0.9 * math.sqrt(L) / (L - 1), 2),
        a_bounds=a_bounds(L),
        a_hi=round(0.75 * math.sqrt(L), 2),
        spacing=0.15,
        umbrella=PROFILE_UMBRELLA,
    )
    base.update(kw)
    return ProfileSettings(**base)


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """``probes``: the first P values (``None``: around the theory's or the MAP's point);
    ``max_probes`` per seed (the first included); ``refine_ratio``: stop when the bracket's
    ``hi / lo`` is below it; ``edge_guard``: each refining probe lies at least this fraction of
    the bracket (in log P) from its ends (:func:`~copyhead_jax.transition.root.next_probe`: the
    posterior mean's step and the clipped basin log-odds are step-like in P); ``placement``:
    what the probes refine once a probe is bimodal, ``"basins"`` the basins' log-odds at the
    verdict's dividing surface (its own P*), ``"fixed"`` the weight past the fixed search
    surface throughout (a copy basin broad around that surface moves its root away from P*);
    ``profile``: the windows (``None``: :func:`default_profile_settings`); ``reuse_hessians``:
    carry the whitening Hessians from a seed's first probe; ``map_switch``: the exact MAP's
    switch beside the verdict."""

    probes: tuple[int, ...] | None = None
    max_probes: int = 7
    refine_ratio: float = 1.04
    edge_guard: float = 0.25
    placement: str = "basins"
    profile: ProfileSettings | None = None
    reuse_hessians: bool = True
    map_switch: bool = True

    def __post_init__(self):
        check_int("max_probes", self.max_probes, lo=2, hi=64)
        if self.probes is not None and (len(self.probes) < 1 or min(self.probes) < 2):
            raise ValueError(f"probes must hold at least one P >= 2, got {self.probes!r}")
        if not self.refine_ratio > 1:
            raise ValueError(f"refine_ratio must be > 1, got {self.refine_ratio!r}")
        if not 0 <= self.edge_guard < 0.5:
            raise ValueError(f"edge_guard must be in [0, 0.5), got {self.edge_guard!r}")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, got {self.placement!r}")
