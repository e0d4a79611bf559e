"""What the ``copyhead theory`` subcommands share: the theory's parameters as flags (a preset,
then overrides), the ``TheoryParams`` they name, JSON output, and the figures' paths."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .._checks import check_output_path
from ..config import BOTH, LIKELIHOODS, LINEAR_SCALES
from .flags import add_preset_flags, finite_float


def parse_range(spec: str) -> list[int]:
    """``'10:60'`` (inclusive), ``'10:60:5'``, ``'10,20,40'`` or ``'25'``."""
    try:
        if ":" in spec:
            parts = [int(x) for x in spec.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError
            lo, hi, step = (*parts, 1) if len(parts) == 2 else parts
            vals = list(range(lo, hi + 1, step))
        else:
            vals = [int(x) for x in spec.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'a:b', 'a:b:step', 'a,b,c' or an int, got {spec!r}"
        ) from None
    if not vals:
        raise argparse.ArgumentTypeError(f"empty range {spec!r}")
    return vals


_SCALES = ("sigma2", "chi", "sigma_e", "sigma_p", "sigma_G", "sigma_O")
_SWITCHES = ("likelihood", "linear_scale", "chi_in_readout_prior", "chi_in_noise")


def common_flags(
    p: argparse.ArgumentParser, *, ranges: bool = False, objectives=("map", "post"), objective="map"
) -> None:
    """The parameters of the theory (a preset, then overrides) and the output options."""
    add_preset_flags(
        p, "the theory's parameters (task, priors, posterior; the flags below override them)"
    )
    if ranges:
        p.add_argument(
            "--L", type=parse_range, default=None, help="'10:60', '10:60:5', '10,20' or 25"
        )
        p.add_argument("--V", type=parse_range, default=None, help="'2:12' or 5")
    else:
        p.add_argument("--L", type=int, default=None, help="sequence length")
        p.add_argument("--V", type=int, default=None, help="vocabulary size")
    for name in _SCALES:
        p.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            type=finite_float,
            default=None,
            help=f"{name} (docs/theory.md §2)",
        )
    p.add_argument(
        "--likelihood",
        choices=LIKELIHOODS,
        default=None,
        help="noise per sequence entry or L times it (per_position), §2b",
    )
    p.add_argument(
        "--linear-scale",
        dest="linear_scale",
        choices=LINEAR_SCALES,
        default=None,
        help="linear attention A = s, s/sqrt(L) or s/L (§2b)",
    )
    p.add_argument(
        "--chi-in-readout-prior",
        dest="chi_in_readout_prior",
        default=None,
        action=argparse.BooleanOptionalAction,
        help="readout prior sigma_O^2/(chi N); --no-...: sigma_O^2/N (§2b)",
    )
    p.add_argument(
        "--chi-in-noise",
        dest="chi_in_noise",
        default=None,
        action=argparse.BooleanOptionalAction,
        help="noise sigma^2/chi; --no-...: sigma^2 (§2b)",
    )
    p.add_argument(
        "--objective",
        choices=objectives,
        default=objective,
        help=f"MAP or posterior (adds D) objective (default {objective})",
    )
    p.add_argument(
        "--json",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="print the result as JSON (default off)",
    )


def theory_params(args, **override):
    """The ``TheoryParams`` of ``args.preset`` under ``args.reading`` with the flags given
    (``override``: L or V)."""
    from ..config import preset
    from ..theory.params import TheoryParams

    kw = {k: getattr(args, k) for k in (*_SCALES, *_SWITCHES)}
    kw = {k: v for k, v in kw.items() if v is not None}
    for k in ("L", "V"):
        v = override.get(k, getattr(args, k))
        if v is not None:
            kw[k] = v
    return TheoryParams.from_config(preset(args.preset, args.reading)).replace(**kw)


def check_theory_memory(need: int, what: str, lower: str) -> None:
    """Refuse, before any work, a theory command whose arrays (``need`` bytes, from the theory's
    memory models) cannot fit the budget; ``lower`` names the flags that shrink them."""
    from ..runner.memory import available_bytes, refuse_if_over

    refuse_if_over(need, available_bytes(), what, lower)


def preset_label(args) -> str:
    """The preset's name under the reading asked (``paper-map``, ``paper-map-chi-lik``), for
    default file names: another reading never overwrites a figure."""
    from ..config import preset, run_name

    return run_name(args.preset, preset(args.preset, args.reading))


def jsonable(x: Any) -> Any:
    """``x`` with arrays as lists and non-finite floats as ``None`` (valid JSON)."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def save_plot(fig, out: str | None, default: str) -> str:
    """``fig`` to ``out`` (else ``default``) as PNG (:func:`copyhead_jax.plots.style.save_figure`);
    the path written, or a one-line error."""
    from ..plots.style import save_figure

    return str(save_figure(fig, Path(out or default)))


def check_plot_paths(args, kind: str) -> None:
    """The figures' paths, checked before the theory is computed."""
    if not args.plot:
        return
    for att in attentions(args.attention):
        check_output_path("--out", _plot_path(args, kind, att), suffixes=(".png",))


def _plot_path(args, kind: str, att: str) -> str:
    return f"{args.out}_{att}.png" if args.out else f"theory_{kind}_{preset_label(args)}_{att}.png"


def plot_outputs(kind: str):
    """The ``paths`` of a theory command drawing one figure ``kind`` per attention:
    ``args -> (outputs, inputs)`` (no inputs)."""
    from ._common import figure_outputs

    def outputs(args):
        if not args.plot:
            return [], []
        return [
            o
            for att in attentions(args.attention)
            for o in figure_outputs("--out", _plot_path(args, kind, att), (".png",))
        ], []

    return outputs


def attentions(a: str) -> list[str]:
    """``--attention``: ``both`` is the paper's two heads (linear and softmax)."""
    return list(BOTH) if a == "both" else [a]


def save_attention_plot(args, att: str, kind: str, draw) -> None:
    """``draw()``'s figure to ``OUT_ATT.png`` (or the default name of ``kind``), announced."""
    path = save_plot(draw(), _plot_path(args, kind, att), "")
    print(f"wrote {path}", file=sys.stderr)


def theory_subcommand(sub, name: str, help: str, epilog: str) -> argparse.ArgumentParser:
    """A ``copyhead theory`` subcommand whose ``--help`` is ``help`` then ``epilog`` as written."""
    return sub.add_parser(
        name,
        help=help,
        description=help,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
