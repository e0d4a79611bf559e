"""Result files of an older schema are refused by name, and the engine still computes what the
schema-1 code computed.

``tests/data/old_softmax_tiny.npz`` is ``run_sweep(TINY.replace(model=dict(attention="softmax")))``
saved by the schema-1 code (commit 6c6e794): a softmax head's ``(a1, aG)`` stored as ``(c1, cG)``,
and the warm-up as ``warmup_frac_softmax`` / ``warmup_frac_linear``. The loaders no longer
rename such files; the test reads its arrays raw to pin the numbers.
"""

import importlib
import re
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main, print_table
from copyhead_jax.results import (
    DRAW_FIELDS,
    POSTERIOR_KIND,
    SCALARS,
    PosteriorResult,
    SweepResult,
    divergence_flags,
)
from copyhead_jax.storage import SCHEMA_VERSION, atomic_save_npz
from tests.helpers import FAKE_CFG, fake_sweep, no_work, one_line_error

# the module (``copyhead_jax.fit.polish`` is the face's function of that name)
polish_mod = importlib.import_module("copyhead_jax.fit.polish")

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
            np.asarray(new[k], float),
            np.asarray(old[k], float),
            rtol=RTOL,
            atol=ATOL,
            err_msg=k,
        )
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
        draws=rng.normal(size=(*shape, len(DRAW_FIELDS))),
        accept=rng.uniform(size=shape),
        distance=rng.uniform(size=shape),
        U0=rng.normal(size=shape[:3]),
        finite=np.ones(shape[:3], bool),
        rhat_cG=rng.uniform(size=shape[:2]),
    )
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


# bad input: divergence flags, incomplete or inconsistent files


def test_divergence_flags_blown_up_but_finite_runs():
    L = FAKE_CFG.task.L
    res = fake_sweep(loss=[[3.0, 114.0], [3.0, 3.0], [3.0, 303.0]])
    flags = divergence_flags(res.arrays, L)
    assert flags.tolist() == [[False, True], [False, False], [False, True]]
    a = dict(res.arrays, train_loss=np.full((3, 2), 3.0))
    a["U"] = np.array([[10.0, 100.0], [10.0, 10.0], [10.0, 10.0]])  # U rose from 20 to 100
    assert divergence_flags(a, L).tolist() == [[False, True], [False, False], [False, False]]
    a["U"][:] = 10.0
    a["finite"] = np.array([[True, True], [False, True], [True, True]])
    assert divergence_flags(a, L).tolist() == [[False, False], [True, False], [False, False]]
    a["finite"][:] = True
    a["curve_U"] = np.full_like(a["curve_U"], np.nan)  # stopped before the first log
    assert not divergence_flags(a, L).any()
    a["curve_loss"] = np.full_like(a["curve_loss"], 4000.0)  # blown up by the first log
    a["train_loss"] = np.array([[82.0, 3.0], [14.0, 40.0], [3.0, 3.0]])
    assert divergence_flags(a, L).tolist() == [[True, False], [True, True], [False, False]]
    a["loss_init"] = np.full((3, 2), 15.0)  # a run that starts high is judged against its start
    assert divergence_flags(a, L).tolist() == [[True, False], [False, True], [False, False]]


def test_a_run_ending_above_its_start_and_the_zero_output_loss_is_diverged():
    """The reduced engine + Adam at lr 10 (raw) ended at loss 17.5 from 9.0, with 6.0
    for a network that outputs nothing: finite, but worse than both; it must not count as ok."""
    a = fake_sweep().arrays
    a["train_loss"] = np.full((3, 2), 17.5)
    a["loss_init"] = np.full((3, 2), 9.0)
    assert divergence_flags(a, FAKE_CFG.task.L).all()
    a["train_loss"] = np.full((3, 2), 8.0)  # worse than f = 0, but better than its start
    assert not divergence_flags(a, FAKE_CFG.task.L).any()


def test_summary_excludes_diverged_runs_and_says_so(tmp_path, capsys):
    res = fake_sweep(loss=[[3.0, 114.0], [3.0, 3.0], [3.0, 5.0]])
    s = res.summary()
    assert s["n_diverged"].tolist() == [1, 0, 0] and s["n_ok"].tolist() == [1, 2, 2]
    assert s["n_finite"].tolist() == [2, 2, 2]
    np.testing.assert_allclose(s["train_loss"], [3.0, 3.0, 4.0])  # 114 left out
    path = res.save(tmp_path / "old.npz")  # no "diverged" array: a file from before the flag
    assert "diverged" not in np.load(path).files
    old = SweepResult.load(path)
    assert old.diverged.tolist() == [[False, True], [False, False], [False, False]]
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\bok div\b", out) and "1 diverged run(s)" in out and "excluded" in out
    stored = fake_sweep(diverged=[[True, False]] * 3)  # a stored flag wins
    assert stored.summary()["n_diverged"].tolist() == [1, 1, 1]


def test_incomplete_result_is_refused_at_load(tmp_path, capsys):
    path = fake_sweep(drop=("cG",)).save(tmp_path / "r.npz")
    with pytest.raises(ValueError, match=r"lacks the arrays \['cG'\]"):
        SweepResult.load(path)
    one_line_error(capsys, main(["show", str(path)]), "lacks the arrays")
    one_line_error(capsys, main(["plot", str(path)]), "lacks the arrays")
    bad = fake_sweep()
    bad.arrays["c1"] = bad.arrays["c1"][:1]
    with pytest.raises(ValueError, match=r"arrays \['c1'\] are not \[P, seed\]"):
        SweepResult.load(bad.save(tmp_path / "b.npz"))


def test_weights_that_disagree_with_the_config_are_refused(reduced, tmp_path, monkeypatch):
    res = SweepResult.load(reduced)
    bad = dict(res.arrays)
    bad["params/W_G"] = bad["params/W_G"][..., :-1, :]
    path = res.replace(arrays=bad).save(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match=r"weights disagree with its config \(params/W_G"):
        SweepResult.load(path)
    monkeypatch.setattr(polish_mod, "polish_runs", no_work)
    with pytest.raises(ValueError, match="weights disagree"):
        polish_mod.polish(res.replace(arrays=bad))


def test_load_messages_name_the_problem(tmp_path, capsys):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"this is not a zip file at all")
    with pytest.raises(ValueError, match="not a readable copyhead_jax result") as e:
        SweepResult.load(junk)
    assert "pickle" not in str(e.value)
    one_line_error(capsys, main(["show", str(tmp_path)]), "is a folder, not a result file")


def test_heads_of_a_sweep_are_its_kept_weights(reduced):
    """``head_arrays``/``heads`` index the ``[P, seed]`` axes (or, ``flat``, the P-major run axis)
    of the stored ``params/*`` exactly: the same numbers, the config's head class."""
    import jax.numpy as jnp

    res = SweepResult.load(reduced)
    nS = res.config.sweep.n_seeds
    last = (len(res.P) - 1, nS - 1)
    one = res.head_arrays(last)
    for k, v in one.items():
        np.testing.assert_array_equal(v, res.arrays[f"params/{k}"][last])
    flat = res.head_arrays(len(res.P) * nS - 1, flat=True)
    assert all(np.array_equal(flat[k], one[k]) for k in one)
    heads = res.heads((np.array([0, last[0]]), np.array([0, last[1]])), dtype=jnp.float32)
    assert type(heads).name == res.config.model.attention
    assert heads.W_G.shape[0] == 2 and heads.W_G.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(heads.W_G[1]), one["W_G"].astype(np.float32))
    with pytest.raises(ValueError, match="kept no weights"):
        res.replace(
            arrays={k: v for k, v in res.arrays.items() if not k.startswith("params/")}
        ).head_arrays()


def test_runs_stopped_by_the_epoch_cap_are_counted_and_said(capsys):
    """A run whose Adam loop ended at ``max_epochs`` did not meet early stopping: it is counted
    per P and the table says so (kept in the means); an early-stopped run is not counted."""
    res = fake_sweep()
    cap = res.config.solver.max_epochs
    res.arrays["stop_epoch"] = np.array([[cap, cap - 7], [cap - 7, cap - 7], [cap, cap]])
    res.arrays["grad_norm"] = np.array([[15.0, 0.1], [0.1, 0.1], [3.0, 2.0]])
    assert res.at_epoch_cap.tolist() == [[True, False], [False, False], [True, True]]
    s = res.summary()
    assert s["n_at_epoch_cap"].tolist() == [1, 0, 2] and s["n_ok"].tolist() == [2, 2, 2]
    print_table(res)
    out = capsys.readouterr().out
    assert f"3 of 6 runs stopped at max_epochs={cap}" in out and "|grad| up to 15" in out
    res.arrays["stop_epoch"] = np.full((3, 2), cap - 1)
    print_table(res)
    assert "max_epochs" not in capsys.readouterr().out


def test_the_exact_solver_has_no_epoch_cap():
    res = fake_sweep(FAKE_CFG.replace(model=dict(engine="reduced"), solver=ch.ExactConfig()))
    assert not res.at_epoch_cap.any()
