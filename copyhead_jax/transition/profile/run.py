r"""The Bayesian transition of a softmax configuration from its posterior profiles, per seed.

For each seed on its own: profiles $F(a_G;P)$ at the first probes (:func:`.windows.measure_profile`
on :mod:`.softmax`'s landscape, the data of exactly $P$ rows), then more probes placed by
:func:`~copyhead_jax.transition.root.next_probe` on $d(P)$ (widening until $d$ changes sign,
then regula falsi in $\log P$) until the bracket is narrower than ``refine_ratio`` or
``max_probes`` are measured. The probes are placed on the log-odds of $a_G\ge a_s$ at a fixed
search surface $a_s$ (the middle of the windows' range, between the pooling and the copying
region): it changes sign only when the probes span both, so a first pair of probes on one side
of the transition widens instead of refining inside one basin; the last probes land where the two
sides weigh about the same, where a barrier, if the transition has one, is highest. $a_s$ only
places probes: the verdict's $d$ uses a dividing surface of the posterior's own (:func:`probes`):
a bimodal profile's barrier top, a unimodal one's the nearest bimodal probe's top, or, with no
bimodal probe, the midpoint of the posterior means at the lowest and highest probe. Once a probe
is bimodal, the later probes are placed on that $d$ itself (``SearchSettings.placement``), so
they refine the verdict's own root: $a_s$ can lie inside a broad copying basin (paper-chi-lik:
the copy basin spans $a_G\approx 1.7$-$2.1$ about $a_s=1.78$), where the weight past $a_s$ turns
above the P at which the basins weigh the same. While no
probe is bimodal (a crossover so far) the search then refines, with the same rule and ratio, the
bracket where the posterior mean passes that midpoint, the crossover's $P^*$: a broad basin's
mean and its weight past $a_s$ can part by ~10% in $P$. Then the
verdict (:mod:`copyhead_jax.compare.profile_verdict`) and, over seeds, ``combine_seeds``. The
whitening Hessians are measured at a seed's first probe and carried to its others
(:meth:`.windows.Anchors.rescaled`). Beside it: the exact MAP's switch and coexistence
(:mod:`.map_switch`). The first probes come from route B's Bayesian point (docs/theory.md
§13) where it covers the configuration, else the EK theory's posterior point, else the MAP
switch; they only place probes, the answer is the posterior's.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable

import jax
import numpy as np

from ..._checks import check_int
from ...compare.profile_verdict import Probe, Verdict, decide, flagged_windows, over_seeds
from ...config import Config
from ...runner import failures, map_groups
from ...runner.eta import LONG_S, announce, duration
from ..branch_runs import cpu_seconds
from ..root import next_probe
from .cost import SMALLER, check_profile_memory, padded_rows, profile_estimate
from .map_switch import map_branches, map_switch
from .merge import measured_seeds
from .settings import SearchSettings, default_profile_settings
from .softmax import Problem, beta_of_aG, build_problem, landscape, logit_start
from .softmax import profile_config as profile_config
from .windows import Anchors, Profile, ProfileSettings, Sampled, analyse, measure_profile

#: d is clipped to this many nats when it places a probe (a basin of weight ~1e-13 is none).
D_CLIP = 30.0


@dataclasses.dataclass
class SeedRun:
    """A seed's profiles, window draws (for re-analysis), verdict and CPU seconds per probe."""

    seed: int
    profiles: dict[int, Profile]
    sampled: dict[int, Sampled]
    verdict: Verdict | None = None
    cpu: dict = dataclasses.field(default_factory=dict)


def probe_of(P: int, prof: Profile, b) -> Probe:
    return Probe(
        P,
        b.bimodal,
        b.barrier,
        b.barrier_se,
        b.a_pool,
        b.a_top,
        b.a_copy,
        b.w_copy,
        b.w_copy_se,
        b.d,
        b.d_se,
        b.d_split_sys,
        prof.mean_a,
        prof.mean_a_se,
        int(prof.F_rep.shape[0]),
        prof.flagged,
        prof.short,
    )


def probes(run: SeedRun, s: ProfileSettings) -> list[Probe]:
    """The seed's probes with a dividing surface defined at every P (module docstring)."""
    profs = run.profiles
    bim = [P for P, p in profs.items() if p.basins.bimodal and not p.short]
    Ps = sorted(profs)
    a_mid = 0.5 * (profs[Ps[0]].mean_a + profs[Ps[-1]].mean_a)
    out = []
    for P in Ps:
        p = profs[P]
        b = p.basins
        if not b.bimodal:
            top = profs[min(bim, key=lambda q: abs(math.log(q / P)))].basins.a_top if bim else a_mid
            sm = run.sampled[P]
            b = analyse(sm.draws, s, sm.centers, sm.a_min, a_top=top)["basins"]
        out.append(probe_of(P, p, b))
    return out


def _log(progress: bool, msg: str) -> None:
    if progress:
        logging.getLogger(__name__).info(msg)


def seed_transition(
    cfg: Config,
    seed: int,
    first: tuple[int, ...],
    ss: SearchSettings,
    key,
    log: Callable[[str], None],
    ckpt_dir=None,
) -> SeedRun:
    """Profiles, probe placement and verdict of sweep seed ``seed`` (module docstring);
    ``ckpt_dir``: where the windows' rounds and draws are kept (resumed on a rerun)."""
    L = cfg.task.L
    s = ss.profile or default_profile_settings(L)
    ls = landscape(_objective(cfg))
    run = SeedRun(seed, {}, {})
    anchors: Anchors | None = None
    P_pad = None

    def measure(P: int):
        nonlocal anchors, P_pad
        check_profile_memory(cfg, s, P)  # a probe the search widened to
        t0 = time.process_time()
        P_pad = max(P, P_pad or 0)
        prob: Problem = build_problem(cfg, seed, P, padded_rows(P))
        reuse = anchors.rescaled(P, ls.floor) if (anchors and ss.reuse_hessians) else None
        prof, sm, anc = measure_profile(
            jax.random.fold_in(key, P),
            ls,
            prob,
            s,
            lambda c: logit_start(prob, beta_of_aG(c, L)),
            anchors=reuse,
            weight=P,
            ckpt_dir=ckpt_dir,
            log=lambda m: log(f"seed {seed} P={P}: {m}"),
        )
        anchors = anchors or anc
        run.profiles[P], run.sampled[P] = prof, sm
        run.cpu[P] = time.process_time() - t0
        b = prof.basins
        d = f", d {b.d:+.2f} +- {b.d_se:.2f}" if b.bimodal else ""
        left = ss.max_probes - len(run.profiles)
        log(
            f"seed {seed} P={P}: {'bimodal' if b.bimodal else 'unimodal'}, barrier "
            f"{b.barrier:.2f} +- {b.barrier_se:.2f} at a {b.a_top:.2f}{d}, "
            f"mean a {prof.mean_a:.3f}, "
            f"{len(sm.centers)} windows, {len(flagged_windows(prof.flagged))} not mixed"
            f"{', range short' if prof.short else ''}, {run.cpu[P]:.0f} CPU-s; at most {left} "
            f"more probe(s) for this seed, ~{duration(left * run.cpu[P])} of CPU at this "
            "one's cost"
        )

    a_s = 0.5 * (s.a_lo + s.a_hi)
    placement: dict[int, float] = {}
    for P in first:
        measure(int(P))
    while len(run.profiles) < ss.max_probes:
        for P, prof in run.profiles.items():
            if P not in placement and not prof.short:
                sm = run.sampled[P]
                placement[P] = analyse(sm.draws, s, sm.centers, sm.a_min, a_top=a_s)["basins"].d
        Ps = sorted(placement)
        d = [placement[P] for P in Ps]
        if ss.placement == "basins" and any(run.profiles[P].basins.bimodal for P in Ps):
            verdict_d = {q.P: q.d for q in probes(run, s)}  # at the basins' own dividing surface
            d = [verdict_d[P] for P in Ps]
        d = np.clip(d, -D_CLIP, D_CLIP)
        P_new = next_probe(Ps, d, refine_ratio=ss.refine_ratio, P_floor=2, edge_guard=ss.edge_guard)
        if P_new is None or int(P_new) in run.profiles:
            break
        measure(int(P_new))
    # no probe bimodal so far: a crossover, whose P* is where the posterior mean passes midway
    # between the lowest and highest probe (the verdict's rule); that need not be where d turns
    # sign (a broad basin's mean and its weight past a_s part), so refine its bracket as well
    while len(run.profiles) < ss.max_probes:
        Ps = sorted(P for P, prof in run.profiles.items() if not prof.short)
        if len(Ps) < 2 or any(run.profiles[P].basins.bimodal for P in Ps):
            break
        mean = np.array([run.profiles[P].mean_a for P in Ps])
        gap = 0.5 * (mean[0] + mean[-1]) - mean  # falls through zero as the mean rises
        P_new = next_probe(
            Ps, gap, refine_ratio=ss.refine_ratio, P_floor=2, edge_guard=ss.edge_guard
        )
        if P_new is None or int(P_new) in run.profiles:
            break
        measure(int(P_new))
    run.verdict = decide(probes(run, s))
    return run


def _estimate(
    cfg: Config,
    s: ProfileSettings,
    nS: int,
    ss: SearchSettings,
    probes,
    where: str,
    warn: bool = True,
) -> bool:
    """Announce what the windows will cost (:mod:`.cost`); whether it is long work."""
    est = announce(
        lambda: profile_estimate(
            cfg, s, n_seeds=nS, max_probes=ss.max_probes, probes=probes, where=where
        ),
        __name__,
        SMALLER,
        warn=warn,
    )
    return est is not None and est.seconds[0] > LONG_S


def _objective(cfg: Config):
    from ...objective import Objective

    return Objective.from_config(profile_config(cfg))


def _theory_point(cfg: Config) -> tuple[float | None, str | None]:
    """The EK theory's posterior P* (else its MAP point) where it has one, and which it is
    (``post``; ``map``; for a Markov source the MAP in the two-parameter ansatz, ``map
    (ansatz)``: it only places the first probes, and the full space costs minutes there);
    ``(None, None)`` otherwise."""
    try:
        from ..search import theory_points

        th = theory_points(cfg)
        if th.get("post"):
            return th["post"], "post"
        space = "full" if cfg.task.source == "iid" else "ansatz"
        return th.get("map"), (None if th.get("map") is None else f"map ({space})")
    except Exception:  # noqa: BLE001 - a configuration the theory does not cover
        return None, None


def _bayes_point(cfg: Config) -> float | None:
    """Route B's Bayesian P*_aG (docs/theory.md §13, one replica) where §13 covers ``cfg``
    (i.i.d. tokens, no causal mask), else None: it lies within ~5% of every measured
    posterior switch where the EK points lie at half of it, so probes placed around it
    bracket the switch at once."""
    if cfg.task.source != "iid" or cfg.model.causal:
        return None
    try:
        from ...theory import TheoryParams
        from ...theory.bayes import softmax_points

        return softmax_points(TheoryParams.from_config(cfg), replicas=1)["P_aG_bayes"]
    except Exception:  # noqa: BLE001 - a configuration route B does not solve
        return None


def first_probes(P0: float) -> tuple[int, ...]:
    """Two probes a factor 1.25 either side of ``P0``."""
    return tuple(sorted({max(2, int(round(P0 / 1.25))), max(3, int(round(P0 * 1.25)))}))


def profile_transition(
    cfg: Config,
    *,
    n_seeds: int | None = None,
    settings: SearchSettings | None = None,
    seed: int = 0,
    progress: bool = True,
    ckpt_dir=None,
    cluster: str | None = None,
    seeds=None,
) -> dict:
    """The Bayesian transition of ``cfg`` (softmax, any source, causal or not) from posterior
    profiles, each seed measured on its own (module docstring); ``seed`` the Monte-Carlo seed;
    ``ckpt_dir``: a folder where every window set's rounds and finished draws are kept, so a
    killed run resumes, recomputing at most the round in progress (the windows' inputs are
    recomputed: deterministic). ``cluster``: the seeds, independent groups (a seed's probes
    depend only on its own profiles and the first probes), run on a Dask cluster
    (``"tcp://host:port"`` or ``"local:N"``, :func:`~copyhead_jax.runner.map_groups`), each
    from its inputs alone (:func:`seed_task`): the same numbers as here; their windows are kept
    in ``ckpt_dir`` by local workers only (a remote worker's filesystem is not this one).
    ``seeds``: the sweep seeds (indices below ``n_seeds``) to measure, default all; a part's
    seeds are the whole run's (no seed's inputs depend on another's), and
    :func:`.merge.merge_seed_parts` joins parts into the whole run's result.
    Returns a JSON-ready dict: ``verdict``, ``P_star``, ``interval``, per seed its verdict,
    evidence, probes and profiles, the MAP switch, CPU seconds."""
    ss = SearchSettings() if settings is None else settings
    cfg = profile_config(cfg if n_seeds is None else cfg.replace(sweep=dict(n_seeds=n_seeds)))
    nS = cfg.sweep.n_seeds
    seed = check_int("seed", seed, lo=0, hi=2**31 - 1)
    measured = measured_seeds(seeds, nS)
    if cluster is not None:
        map_groups(len, [], cluster=cluster)  # a bad address fails here, before any work
    log = lambda m: _log(progress, m)  # noqa: E731
    cpu0 = cpu_seconds()
    s0 = ss.profile or default_profile_settings(cfg.task.L)
    # before any work: the part no P changes (windows, chains, draws; the fewest rows), then the
    # first probes and a search widening to 4x them (given probes: before the theory, which
    # takes minutes for Markov tokens; else once the theory placed them)
    check_profile_memory(cfg, s0, min(ss.probes) if ss.probes else 2)
    if ss.probes:
        check_profile_memory(cfg, s0, 4 * max(ss.probes))
    P0, P0_kind = _theory_point(cfg)
    P_theory = P0  # P0 may become the MAP switch below (where the theory has no point)
    if not ss.probes:
        check_profile_memory(cfg, s0, 4 * max(first_probes(P0 or 16.0)))
    long = False
    if progress:  # what it will cost, before any work (one line on stderr under the command)
        where = (
            "given"
            if ss.probes
            else "around the EK theory's posterior point; the "
            "posterior's own lies up to ~2x above it"
            if P0
            else "the default P = 16"
        )
        long = _estimate(
            cfg, s0, len(measured), ss, tuple(ss.probes or first_probes(P0 or 16.0)), where
        )
    maps: list[dict] = []
    if ss.map_switch:
        grid = sorted(
            {max(2, int(round(p))) for p in np.geomspace((P0 or 16) / 4, (P0 or 16) * 1.6, 14)}
        )
        log(f"exact MAP from both starts, P = {grid}, {nS} seed(s)")
        # every seed's (one program): the first probes may come from their switches
        maps = [
            {"seed": s, **br, **map_switch(br)} for s, br in enumerate(map_branches(cfg, nS, grid))
        ]
        for s, m in enumerate(maps):
            if s not in measured:
                continue
            log(
                f"seed {s}: MAP switch {_f(m['P_switch'])}, coexistence "
                f"{'yes at P = ' + str(m['coexistence_P']) if m['coexistence'] else 'no'}"
            )
    P_bayes = None
    if ss.probes is not None:
        first = tuple(sorted(set(int(p) for p in ss.probes)))
    else:
        P_bayes = _bayes_point(cfg)
        sw = [m["P_switch"] for m in maps if m.get("P_switch")]
        P0 = P0 or (float(np.exp(np.mean(np.log(sw)))) if sw else 16.0)
        first = first_probes(P_bayes or P0)
        log(
            f"first probes {list(first)} around "
            + (f"route B's P* {P_bayes:.1f}" if P_bayes else f"P = {P0:.1f}")
        )
        if progress:  # the estimate again, at the probes' own rows
            _estimate(cfg, s0, len(measured), ss, first, "placed", warn=not long)
    s_prof = ss.profile or default_profile_settings(cfg.task.L)
    ss = dataclasses.replace(ss, profile=s_prof)
    maps = [m for m in maps if m["seed"] in measured]
    tasks = [(cfg, s, first, ss, seed, ckpt_dir, progress) for s in measured]
    runs, cpu_away = [], 0.0
    if cluster is None:
        for i, task in enumerate(tasks):
            run = seed_task(task)
            runs.append(run)
            left = len(tasks) - i - 1
            log(
                f"seed {run.seed}: {run.verdict.kind}, P* = {_f(run.verdict.P_star)}"
                + (
                    f"; {left} seed(s) left, ~{duration(left * sum(run.cpu.values()))} of CPU at "
                    "this seed's cost"
                    if left
                    else ""
                )
            )
    else:
        runs = _fan_out(cluster, tasks, log)
        cpu_away = sum(sum(r.cpu.values()) for r in runs)  # the workers' probes
    over = over_seeds([r.verdict for r in runs])
    return {
        "method": "profile",
        "quantity": "P*_aG",
        "attention": cfg.model.attention,
        "L": cfg.task.L,
        "V": cfg.task.V,
        "width": cfg.model.width,
        "causal": cfg.model.causal,
        "source": cfg.task.source,
        "source_params": (
            None
            if cfg.task.source == "iid"
            else {k: getattr(cfg.task, k) for k in ("rho", "alpha", "chain_seed")}
        ),
        "n_seeds": nS,
        "seeds_measured": list(measured),
        "seed": seed,
        "verdict": over["kind"],
        "P_star": over["P_star"],
        "interval": [over["lo"], over["hi"]],
        "summary": over,
        "theory_point": P_theory,
        "theory_point_kind": P0_kind,
        "theory_bayes_point": P_bayes,
        "first_probes": list(first),
        "seeds": [seed_json(r) for r in runs],
        "map": maps,
        "settings": dataclasses.asdict(ss),
        "flagged": [
            f"seed {r.seed} P={P}: {line}"
            for r in runs
            for P in sorted(r.profiles)
            for line in r.profiles[P].flagged + r.profiles[P].short
        ],
        "cpu_seconds": cpu_seconds() - cpu0 + cpu_away,
    }


def seed_task(task: tuple) -> SeedRun:
    """One seed of :func:`profile_transition` from ``(cfg, seed index, first probes, search
    settings, Monte-Carlo seed, ckpt_dir, progress)`` alone (here, or on a cluster's worker)."""
    cfg, s, first, ss, seed, ckpt_dir, progress = task
    key = jax.random.fold_in(jax.random.key(seed), s)
    return seed_transition(cfg, s, first, ss, key, lambda m: _log(progress, m), ckpt_dir)


def _fan_out(cluster: str, tasks: list, log) -> list[SeedRun]:
    """The seeds ``tasks`` on ``cluster`` (windows kept in ``ckpt_dir`` by local workers only);
    a seed that failed there is one ``ValueError`` after the others ran."""
    local = cluster.startswith("local:")
    tasks = [t if local else (*t[:5], None, t[6]) for t in tasks]
    log(f"{len(tasks)} seed(s) on {cluster}")
    out = map_groups(
        seed_task,
        tasks,
        cluster=cluster,
        progress=lambda d, n: log(f"cluster: {d}/{n} seed(s) done"),
    )
    bad = failures(out)
    if bad:
        raise ValueError(f"{len(bad)} of {len(tasks)} seed(s) failed on {cluster}: {bad[0]}")
    for r in out:
        log(f"seed {r.seed}: {r.verdict.kind}, P* = {_f(r.verdict.P_star)}")
    return out


def _f(x, nd=4) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{nd}g}"


def profile_json(prof: Profile) -> dict:
    h = prof.health
    return {
        "edges": prof.edges,
        "F": prof.F,
        "F_se": prof.F_se,
        "mean_a": prof.mean_a,
        "mean_a_se": prof.mean_a_se,
        "basins": dataclasses.asdict(prof.basins),
        "flagged": prof.flagged,
        "short": prof.short,
        "rows": prof.rows,
        "seconds": prof.seconds,
        "centers": prof.centers,
        "kappa": prof.kappa,
        "target": prof.target,
        "windows": {
            "a_min": h.a_min,
            "rhat": h.rhat,
            "ess": h.ess,
            "accept": h.accept,
            "step": h.step,
            "overlap_next": h.overlap_next,
            "rhat_U": h.rhat_U,
            "ess_U": h.ess_U,
            "n_draws": h.n_draws,
            "target_met": h.target_met,
        },
    }


def seed_json(run: SeedRun) -> dict:
    v = run.verdict
    return {
        "seed": run.seed,
        "verdict": v.kind,
        "evidence": list(v.evidence),
        "P_star": v.P_star,
        "crossing": None if v.crossing is None else v.crossing.to_dict(),
        "coexistence": v.coexistence,
        "coexistence_outer": v.coexistence_outer,
        "P_mid": v.P_mid,
        "P_steepest": v.P_steepest,
        "probes": [dataclasses.asdict(p) for p in v.probes],
        "cpu": run.cpu,
        "profiles": {P: profile_json(run.profiles[P]) for P in sorted(run.profiles)},
    }
