"""Result files written before the heads named their own order parameters still load.

``tests/data/old_softmax_tiny.npz`` is ``run_sweep(TINY.replace(model=dict(attention="softmax")))``
saved by the schema-1 code (commit 6c6e794): a softmax head's ``(a1, aG)`` stored as ``(c1, cG)``,
and the warm-up as ``warmup_frac_softmax`` / ``warmup_frac_linear``.
"""

from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import print_table
from copyhead_jax.results import DRAW_FIELDS, POSTERIOR_KIND, SCALARS, PosteriorResult
from copyhead_jax.storage import SCHEMA_VERSION, atomic_save_npz

OLD = Path(__file__).parent / "data" / "old_softmax_tiny.npz"
CFG = ch.TINY.replace(model=dict(attention="softmax"))

# Same config, same keys, same CPU program: the numbers agree to float32 rounding of sums that
# may be reassociated (observables are projections of an L x L mean over <= 8 sequences:
# ~1e-7 relative). Any behaviour change (another warm-up, lr, init or a swapped order parameter)
# moves the fit at O(1e-2) after 200 Adam epochs, so 1e-5 separates the two by 3 decades.
RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(scope="module")
def old():
    return ch.SweepResult.load(OLD)


def test_old_softmax_file_loads_under_the_heads_names(old):
    assert old.order_names == ("a1", "aG")
    assert {"a1", "aG"} <= set(old.arrays) and not {"c1", "cG"} & set(old.arrays)
    assert old["cG"] is old["aG"] and old["c1"] is old["a1"]  # c1/cG: the generic aliases
    assert {"aG", "aG_sd"} <= set(old.summary())
    assert old.config.train.warmup_frac == 0.1  # from warmup_frac_softmax; linear's dropped
    assert ch.SoftmaxHead.warmup_frac(old.config.train) == ch.SoftmaxHead.warmup_frac(CFG.train)


def test_old_file_and_a_fresh_run_give_the_same_numbers(old, tmp_path):
    assert old.config == CFG.replace(train=dict(warmup_frac=0.1))  # None = the head's 0.1
    new = ch.run_sweep(CFG, out=tmp_path / "new.npz", progress=False)
    assert "aG" in new.arrays and "cG" not in new.arrays
    for k in (*SCALARS, "mean_attention", "positional_logits", "curve_U", "params/W_G"):
        np.testing.assert_allclose(
            np.asarray(new[k], float), np.asarray(old[k], float), rtol=RTOL, atol=ATOL,
            err_msg=k,
        )  # fmt: skip
    back = ch.SweepResult.load(tmp_path / "new.npz")
    assert back.meta["schema"] == SCHEMA_VERSION == 2 and "aG" in back.arrays


def test_cli_table_names_the_softmax_order_parameters(old, capsys):
    print_table(old)
    header = capsys.readouterr().out.splitlines()[1].split()
    assert header[:3] == ["P", "a1", "aG"]


def _posterior_file(path, attention: str, schema: int) -> Path:
    rng = np.random.default_rng(0)
    shape = (3, 2, 2, 4)  # P, seed, chain, draw (TINY: 3 P, 2 seeds)
    arrays = dict(
        draws=rng.normal(size=(*shape, len(DRAW_FIELDS))), accept=rng.uniform(size=shape),
        distance=rng.uniform(size=shape), U0=rng.normal(size=shape[:3]),
        finite=np.ones(shape[:3], bool), rhat_cG=rng.uniform(size=shape[:2]),
    )  # fmt: skip
    cfg = CFG.replace(model=dict(attention=attention)).to_dict()
    del cfg["train"]["warmup_frac"]
    cfg["train"].update(warmup_frac_softmax=0.1, warmup_frac_linear=0.0)  # schema-1 config
    sgld = dict(step_size=1e-6, n_steps=40, burn_in=8, thin=8, n_chains=2, seed=1)
    meta = dict(kind=POSTERIOR_KIND, schema=schema, config=cfg, fields=list(DRAW_FIELDS), sgld=sgld)
    return atomic_save_npz(path, arrays, meta)


@pytest.mark.parametrize("attention, names", [("softmax", ("a1", "aG")), ("linear", ("c1", "cG"))])
def test_old_posterior_file_is_renamed_for_softmax_only(tmp_path, attention, names):
    post = PosteriorResult.load(_posterior_file(tmp_path / "p.npz", attention, schema=1))
    n1, nG = names
    assert post.order_names == names and post.fields[2:4] == names
    assert f"rhat_{nG}" in post.arrays
    draws = post.arrays["draws"]
    np.testing.assert_array_equal(post[nG], draws[..., 3])
    np.testing.assert_array_equal(post["cG"], draws[..., 3])  # the generic alias
    np.testing.assert_array_equal(post["rhat_cG"], post.arrays[f"rhat_{nG}"])
    np.testing.assert_array_equal(post[n1], draws[..., 2])


def test_new_schema_posterior_keeps_its_stored_names(tmp_path):
    """Schema 2 is read as written: no renaming of a file that already uses its own names."""
    post = PosteriorResult.load(_posterior_file(tmp_path / "p.npz", "softmax", schema=2))
    assert post.fields == DRAW_FIELDS and "rhat_cG" in post.arrays
    np.testing.assert_array_equal(post["aG"], post.arrays["draws"][..., 3])  # alias both ways
