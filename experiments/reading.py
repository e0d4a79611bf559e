"""``python -m experiments reading scaling-L scaling-V main coverage posterior [--publish]``: the
default mode's artefacts (``configs/paper.py``) under the ``paper-chi-lik`` reading (chi in the
likelihood only, docs/theory.md §2b): the ``paper`` spec with ``chi_in_readout_prior=False``, its
grids placed around that reading's EK ``P*`` (19 / 388 / 230 at L = 25, V = 5).

Kept small: scaling over the paper preset's L and V grids, 3 seeds per point, one refinement round,
no finite-width theory per point; main at width 10,000 only, 3 seeds (the 10-seed P* are
``experiments.conventions``'), the coverage ablation on its runs. Cached under ``--cache``
(resumes); ~25 CPU-min on the shared 2-core CPU. ``posterior``: the early-warning
windows of ``experiments.posterior`` (``configs/posterior.py`` QUICK, preset ``paper-chi-lik``, 10
seeds, cached in ``results/posterior/quick``; ~75 CPU-min).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import copyhead_jax as ch

from . import analysis
from . import common as C

ROOT = Path(__file__).resolve().parents[1]
READING = "paper-chi-lik"
STEPS = ("scaling-L", "scaling-V", "main", "coverage", "posterior")
#: scaling under this reading: 3 seeds (the minimum for an interval), no finite theory per point (~1
#: CPU-min each; the finite theory sits within 1% of EK at N = 10,000 in main_paper.json)
SCALING = dict(n_seeds=3, finite=False)
#: main under this reading (EK: P_c1 19.0, P_cG 388, P_aG 230 with spinodals [221, 247];
#: measured at N = 10,000 in conventions.json: 17.2 / 392.5 / 238.4)
MAIN = dict(
    P_linear=[4, 8, 12, 16, 20, 24, 32, 64, 128, 200, 300, 400, 500, 800],
    P_pool=[150, 200, 220, 230, 240, 250, 280, 320],
    P_copy=[200, 220, 230, 240, 250, 280],
    theory_P=[1.0, 3000.0],
    n_seeds=3,  # the coverage ablation's runs; the 10-seed P* are experiments.conventions'
    rounds=1,
    n_new=2,
    max_run_s=1e9,
    extra_widths=[],
)


def reading_spec(artefact: str, cache: Path, mode: str = "paper") -> C.Spec:
    """The ``paper`` spec of ``artefact`` with chi in the likelihood only."""
    base = C.load_spec(mode, "paper", artefact, cache)
    engine = base.engine.replace(posterior=dict(chi_in_readout_prior=False))
    settings = dict(base.settings)
    if artefact.startswith("scaling"):
        settings.update(SCALING)
    elif mode == "paper":
        settings = dict(MAIN)
    return dataclasses.replace(base, preset=READING, engine=engine, settings=settings)


def run(step: str, out: Path, cache: Path, mode: str = "paper") -> dict:
    """One step into ``out/results`` (the main spec is shared by ``main`` and ``coverage``)."""
    if step == "posterior":  # the early-warning windows (configs/posterior.py QUICK)
        spec = dataclasses.replace(
            reading_spec("main", cache, mode), artefact="posterior", settings={"mc": "quick"}
        )
        return C.artefact_main("posterior")(
            spec, out, command="python -m experiments.reading posterior"
        )
    spec = reading_spec(step, cache, mode)
    if step == "main":
        return analysis.load_or_run(spec, out)
    if step == "coverage":
        return C.artefact_main("coverage")(spec, out, main_spec=reading_spec("main", cache, mode))
    return C.artefact_main(step)(spec, out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m experiments reading", description=__doc__)
    p.add_argument("steps", nargs="+", choices=STEPS)
    p.add_argument("--out", default=f"results/experiments/{READING}", help="output folder")
    p.add_argument("--cache", default=f"results/reproduce/cache/{READING}", help="run cache")
    p.add_argument("--publish", action="store_true", help="write into docs/reports/")
    a = p.parse_args(argv)
    out = ROOT / "docs" / "reports" if a.publish else Path(a.out)
    cache = Path(a.cache)
    for d, name in ((out, "--out"), (cache, "--cache")):
        ch.check_output_folder(name, d)
    from .__main__ import use_compile_cache

    use_compile_cache(cache)
    for s in a.steps:
        t0 = time.time()
        run(s, out, cache)
        C.log(f"reading {READING}: {s} done in {time.time() - t0:.0f} s wall")


if __name__ == "__main__":
    main()
