"""Result files of an older schema are refused by name, and the engine still computes what the
schema-1 code computed.

``tests/data/old_softmax_tiny.npz`` is ``run_sweep(TINY.replace(model=dict(attention="softmax")))``
saved by the schema-1 code (commit 6c6e794): a softmax head's ``(a1, aG)`` stored as ``(c1, cG)``,
and the warm-up as ``warmup_frac_softmax`` / ``warmup_frac_linear``. The loaders no longer
rename such files; the test reads its arrays raw to pin the numbers.
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
SCHEMA1_NAMES = {"c1": "a1", "cG": "aG"}  # what schema 1 stored a softmax head's (a1, aG) as


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    out = tmp_path_factory.mktemp("compat") / "new.npz"
    return ch.run_sweep(CFG, out=out, progress=False), out


def test_old_schema_sweep_file_is_refused_naming_the_schema():
    with pytest.raises(ValueError, match=r"has result schema 1; .* reads schema 2 only") as e:
        ch.SweepResult.load(OLD)
    assert "\n" not in str(e.value)  # one line


def test_a_fresh_run_gives_the_schema1_codes_numbers(fresh):
    new, path = fresh
    assert "aG" in new.arrays and "cG" not in new.arrays
    with np.load(OLD) as z:
        old = {SCHEMA1_NAMES.get(k, k): z[k] for k in z.files if k != "__meta__"}
    for k in (*SCALARS, "mean_attention", "positional_logits", "curve_U", "params/W_G"):
        k = SCHEMA1_NAMES.get(k, k)
        np.testing.assert_allclose(
            np.asarray(new[k], float), np.asarray(old[k], float), rtol=RTOL, atol=ATOL,
            err_msg=k,
        )  # fmt: skip
    back = ch.SweepResult.load(path)
    assert back.meta["schema"] == SCHEMA_VERSION == 2 and "aG" in back.arrays


def test_cli_table_names_the_softmax_order_parameters(fresh, capsys):
    print_table(fresh[0])
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
    sgld = dict(step_size=1e-6, n_steps=40, burn_in=8, thin=8, n_chains=2, seed=1)
    meta = dict(kind=POSTERIOR_KIND, schema=schema, config=cfg, fields=list(DRAW_FIELDS), sgld=sgld)
    return atomic_save_npz(path, arrays, meta)


def test_old_schema_posterior_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match="has result schema 1"):
        PosteriorResult.load(_posterior_file(tmp_path / "p.npz", "softmax", schema=1))


def test_new_schema_posterior_keeps_its_stored_names(tmp_path):
    """Schema 2 is read as written: no renaming of a file that already uses its own names."""
    post = PosteriorResult.load(_posterior_file(tmp_path / "p.npz", "softmax", schema=2))
    assert post.fields == DRAW_FIELDS and "rhat_cG" in post.arrays
    np.testing.assert_array_equal(post["aG"], post.arrays["draws"][..., 3])  # alias both ways
