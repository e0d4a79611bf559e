"""copyhead_jax.sampling.llc_runs and ``copyhead llc``: the per-run learning coefficient against the
exact answer of its Gaussian (Laplace) approximation, the lowest-U centre, the command, bad
input."""

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.models import head_class
from copyhead_jax.objective import Objective
from copyhead_jax.sampling import draw_fields
from copyhead_jax.sampling.llc_runs import LLCSettings, devinterp_sweep, llc_runs, lowest_u_fits

pytestmark = pytest.mark.filterwarnings("ignore")

#: short chains: ~100 effective draws of L_n per estimator on the tiny head (measured ESS 150-200
#: at 2,000 steps); one compiled program per P, shared by every test below
ST = LLCSettings(n_steps=1200, burn_in=300, thin=3, n_chains=4)
CLI_ST = ["--steps", "1200", "--burn-in", "300", "--thin", "3", "--chains", "4"]


@pytest.fixture(scope="module")
def sweep():
    """Tiny reduced softmax sweep; sigma^2 = 0.03 makes the data curvatures comparable to
    gamma = 100, so lambda-hat is O(1) rather than ~0 (a comparison of two zeros tests nothing)."""
    cfg = ch.TINY.replace(
        task=dict(L=6, V=3),
        model=dict(engine="reduced", attention="softmax", width=64),
        sweep=dict(P=(8,), n_seeds=1),
        posterior=dict(sigma2=0.03),
    )
    return ch.run_sweep(cfg, keep_params=True, progress=False)


def _laplace_llc(res, nbeta_over_n: float, gamma: float) -> float:
    r"""$\hat\lambda$ of the quadratic expansion of $L_n$ at $w^*$ (gradient $g$, Hessian $H$):
    the localised tempered law is Gaussian with precision $A=n\beta H+\gamma I$ and mean shift
    $\mu=-A^{-1}n\beta g$, so $\hat\lambda=n\beta(g\cdot\mu+\frac12\mathrm{tr}(HA^{-1})+
    \frac12\mu^\top H\mu)$."""
    cfg = res.config
    P = int(cfg.sweep.P[0])
    obj = Objective.from_config(cfg)
    tok = jnp.asarray(np.asarray(sweep_inputs(cfg, None).train)[0][:P])
    prm = {k: jnp.asarray(res[f"params/{k}"][0, 0]) for k in ("W_E", "b", "W_G", "W_O_hat")}
    nG = prm["W_G"].size

    def Ln(x):
        h = head_class(cfg.model.attention).from_config(
            cfg,
            W_E=prm["W_E"],
            b=prm["b"],
            W_G=x[:nG].reshape(prm["W_G"].shape),
            W_O_hat=x[nG:].reshape(prm["W_O_hat"].shape),
        )
        return obj.likelihood_weight * jnp.sum(h.squared_errors(tok)) / P

    x = jnp.concatenate([prm["W_G"].ravel(), prm["W_O_hat"].ravel()])
    g, H = (np.asarray(jax.jit(f)(x), float) for f in (jax.grad(Ln), jax.hessian(Ln)))
    nb = nbeta_over_n * P
    A = nb * H + gamma * np.eye(len(x))
    mu = -np.linalg.solve(A, nb * g)
    return nb * (g @ mu + 0.5 * np.trace(np.linalg.solve(A, H)) + 0.5 * mu @ H @ mu)


def test_both_temperatures_match_the_laplace_answer(sweep):
    """At gamma = 100 the localised law has width <= 0.1 about w*, where L_n of the tiny head is
    close to quadratic. Each SGLD estimate must agree with the Gaussian answer at its n beta
    within 4 MCSE + SGLD's O(eta) bias (at most eta_frac / 2 = 2.5% of the value) + 5% for the
    cubic terms the Gaussian drops. The two temperatures give different answers (n beta differs
    by log 8 = 2.1), so each is checked against its own."""
    r = llc_runs(sweep, settings=ST, estimators=("beta1", "devinterp"))
    assert np.isnan(r.arrays["wbic"]).all()  # not asked for: not run
    for name, frac in (("beta1", 1.0), ("devinterp", 1 / math.log(8))):
        want = _laplace_llc(sweep, frac, ST.gamma)
        got, se = r.arrays[name][0, 0], r.arrays[f"{name}_mcse"][0, 0]
        assert want > 1.0, name
        assert abs(got - want) < 4 * se + 0.075 * abs(want), (name, got, want, se)
        assert r.arrays[f"{name}_rhat"][0, 0] < 1.1
    # the reduced parameter count: (V + L)^2 logit weights + V (V + L) readout weights
    assert r.d == 9 * 9 + 3 * 9
    # devinterp_sweep: the same chains (same key), its arrays renamed, n beta = P / log P
    dv = devinterp_sweep(sweep, jax.random.key(ST.seed), ST)
    for k, name in (("value", "devinterp"), ("mcse", "devinterp_mcse"), ("ess", "devinterp_ess")):
        np.testing.assert_array_equal(dv[k], r.arrays[name])
    assert dv["nbeta"][0, 0] == pytest.approx(8 / math.log(8))


def test_the_centre_is_the_lowest_u_fit_of_the_starts(sweep):
    """With a second 'start' whose fits are other weights at lower U for one run only, that run
    takes its weights from the second sweep and every other run keeps the first's."""
    other = {k: v.copy() for k, v in sweep.arrays.items()}
    other["U"] = other["U"] - 1.0  # lower U everywhere ...
    other["params/W_G"] = other["params/W_G"] + 1.0
    two = sweep.replace(arrays=other)
    best, src = lowest_u_fits([sweep, two])
    assert src.tolist() == [[1]]
    np.testing.assert_array_equal(best["params/W_G"], other["params/W_G"])
    worse = {k: v.copy() for k, v in other.items()}
    worse["U"] = sweep.arrays["U"] + 1.0  # ... or higher: the first sweep's fit stays
    best, src = lowest_u_fits([sweep, sweep.replace(arrays=worse)])
    assert src.tolist() == [[0]]
    np.testing.assert_array_equal(best["params/W_G"], sweep.arrays["params/W_G"])
    bad = {k: v.copy() for k, v in sweep.arrays.items()}
    bad["finite"] = np.zeros_like(bad["finite"])  # a run with no ok fit: no centre
    best, src = lowest_u_fits([sweep.replace(arrays=bad)])
    assert src.tolist() == [[-1]] and not best.ok.any()


def test_cli_json_table_and_figure(sweep, tmp_path, capsys):
    path = sweep.save(tmp_path / "sweep_softmax.npz")
    fig = tmp_path / "llc.png"
    assert main(["llc", str(path), *CLI_ST, "--json", "--out", str(fig), "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[0])
    assert out["d"] == 108 and out["d_half"] == 54 and out["P"] == [8]
    for k in ("beta1", "devinterp", "wbic", "beta1_mcse", "wbic_rhat", "source"):
        assert np.isfinite(out[k][0][0]), k
    assert fig.is_file() and fig.stat().st_size > 0
    assert main(["llc", str(path), *CLI_ST, "--no-progress"]) == 0
    table = capsys.readouterr().out
    assert "d/2 = 54" in table and "WBIC" in table


@pytest.mark.bad_input
def test_bad_input_is_refused_with_the_parameter_named(sweep, tmp_path):
    with pytest.raises(ValueError, match="gamma"):
        LLCSettings(gamma=-1.0)
    with pytest.raises(ValueError, match="burn_in"):
        LLCSettings(n_steps=10, burn_in=10)
    with pytest.raises(ValueError, match="draws per chain"):
        LLCSettings(n_steps=10, burn_in=5, thin=2)
    full = sweep.replace(config=sweep.config.replace(model=dict(engine="full")))
    with pytest.raises(ValueError, match="reduced-engine"):
        llc_runs(full, settings=ST)
    other = sweep.replace(config=sweep.config.replace(posterior=dict(sigma2=1.0)))
    with pytest.raises(ValueError, match="posterior"):
        lowest_u_fits([sweep, other])
    with pytest.raises(ValueError, match="estimators"):
        llc_runs(sweep, settings=ST, estimators=("lambda",))
    with pytest.raises(ValueError, match="settings"):
        llc_runs(sweep, settings={"gamma": 1.0})
    trained = sweep.replace(config=sweep.config.replace(train=dict(train_embeddings=True)))
    with pytest.raises(ValueError, match="llc needs quenched embeddings"):
        llc_runs(trained, settings=ST)  # its centres are joint-MAP fits: a NaN table otherwise
    junk = tmp_path / "junk.npz"
    np.savez(junk, x=np.zeros(2))
    assert main(["llc", str(junk)]) == 2  # 'copyhead: error: files: ... neither a sweep ...'
    assert main(["llc", str(tmp_path / "missing.npz")]) == 2


def test_chains_too_large_for_the_budget_are_refused_before_any_work(sweep):
    """The buffer of 10^9 steps (4 chains x 2 x 10^8 kept draws, float32: ~6 GiB) against a
    1 GiB budget: refused by the memory model in one line naming the flags that shrink it,
    before any chain is compiled; the model is linear in the kept draws."""
    from copyhead_jax.sampling.llc_chains import llc_bytes

    small = sweep.replace(config=sweep.config.replace(sweep=dict(memory_budget_gb=1.0)))
    big = LLCSettings(n_steps=10**9, burn_in=0, thin=5)
    with pytest.raises(
        ValueError,
        match=r"llc: 1 seed\(s\) x 4 chain\(s\) of 200,000,000 draws"
        r".* needs about .* GiB .* use fewer --steps or --chains",
    ):
        llc_runs(small, settings=big)
    a, b = (
        llc_bytes(small.config, LLCSettings(n_steps=n, burn_in=0, thin=1), 10) for n in (1000, 2000)
    )
    assert b - a == 2 * 4 * 4 * 3 * 1000  # 2 x chains x float32 x (L_n, o1, oG) x extra draws


def test_a_posterior_file_adds_its_own_beta1_estimate(sweep, tmp_path, capsys):
    """The posterior's own lambda-hat is E_post[E] - E(w*) with E = w_lik P train_loss: draws
    whose loss sits a known delta above the fit's give w_lik P delta exactly (no sampling in
    this estimate), and a non-finite chain is left out."""
    cfg, P = sweep.config, 8
    fields = draw_fields(cfg)
    draws = np.zeros((1, 1, 2, 6, len(fields)))
    delta = 0.25
    draws[..., fields.index("train_loss")] = sweep["train_loss"][0, 0] + delta
    draws[0, 0, 1, :, fields.index("train_loss")] = 1e6  # the chain flagged non-finite below
    post = ch.PosteriorResult(
        cfg, ch.SGLDConfig(), {"draws": draws, "finite": np.array([[[True, False]]])}, {}, fields
    )
    want = Objective.from_config(cfg).likelihood_weight * P * delta
    r = llc_runs(sweep, posterior=post, settings=ST, estimators=("beta1",))
    assert r.arrays["posterior"][0, 0] == pytest.approx(want, rel=1e-9)  # float64 arithmetic
    # the command finds the sweep next to FILE_posterior.npz
    sweep.save(tmp_path / "sweep_softmax.npz")
    path = post.save(tmp_path / "sweep_softmax_posterior.npz")
    assert main(["llc", str(path), *CLI_ST, "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[0])
    assert out["posterior"][0][0] == pytest.approx(want, rel=1e-9)
    two = tmp_path / "other_posterior.npz"
    post.save(two)
    assert main(["llc", str(path), str(two)]) == 2  # at most one posterior file


# --- resume: finished chain sets are kept ----------------------------------------------------

#: short chains on a 3-P sweep: 9 chain sets (3 P x 3 estimators), each a checkpoint
RESUME_ST = LLCSettings(n_steps=400, burn_in=100, thin=3, n_chains=2)


@pytest.fixture(scope="module")
def sweep3(sweep):
    cfg = sweep.config.replace(sweep=dict(P=(1, 8, 12), n_seeds=2))
    return ch.run_sweep(cfg, keep_params=True, progress=False)


@pytest.fixture(scope="module")
def whole(sweep3):
    """The uninterrupted run, without checkpoints."""
    return llc_runs(sweep3, settings=RESUME_ST)


def test_an_interrupted_llc_resumes_bit_identically(sweep3, whole, tmp_path):
    """Kept chain sets are reused and the rest recomputed: a run that lost some of its chain
    sets (killed before them) gives numbers bit-identical to an uninterrupted run, and leaves
    the kept ones untouched; another setting recomputes (the fingerprint names them)."""
    ckpt = tmp_path / "ck"
    first = llc_runs(sweep3, settings=RESUME_ST, ckpt_dir=ckpt)
    chunks = sorted(ckpt.glob("chunk_*.npz"))
    assert len(chunks) == 9
    for k in whole.arrays:
        np.testing.assert_array_equal(first.arrays[k], whole.arrays[k], err_msg=k)
    lost = chunks[4:]  # the run ended after its fourth chain set
    for c in lost:
        c.unlink()
    kept = {c: c.stat().st_mtime_ns for c in chunks[:4]}
    again = llc_runs(sweep3, settings=RESUME_ST, ckpt_dir=ckpt)
    assert {c: c.stat().st_mtime_ns for c in chunks[:4]} == kept  # reused, not rewritten
    assert all(c.is_file() for c in lost)
    for k in whole.arrays:
        np.testing.assert_array_equal(again.arrays[k], whole.arrays[k], err_msg=k)
    assert np.isfinite(whole.arrays["beta1"][1:]).all()  # real numbers were compared
    other = llc_runs(
        sweep3,
        settings=dataclasses.replace(RESUME_ST, seed=1),
        ckpt_dir=ckpt,
        estimators=("beta1",),
    )
    assert np.isfinite(other.arrays["beta1"][1:]).all()
    assert not (other.arrays["beta1"][1:] == whole.arrays["beta1"][1:]).any()


@pytest.mark.slow  # two processes compile the chains (~18 s); fast: the resume test above
def test_the_command_keeps_finished_chain_sets_on_ctrl_c_and_resumes(sweep3, whole, tmp_path):
    """``copyhead llc`` stopped by SIGINT once its first chain sets are kept: exit 130, the
    farewell names the kept folder; the same command again resumes from it and prints the JSON
    of an uninterrupted run; the folder is removed once the command completes. The process
    sends itself the SIGINT right after it saves its second chain set (a parent polling for
    that file raced the child: starved under load, it signalled a run already finishing)."""
    import subprocess
    import sys

    from copyhead_jax.cli.llc import checkpoint_folder
    from tests.helpers import ROOT

    path = sweep3.save(tmp_path / "sweep_softmax.npz")
    argv = [
        "llc",
        str(path),
        "--steps",
        "400",
        "--burn-in",
        "100",
        "--thin",
        "3",
        "--chains",
        "2",
        "--json",
        "--no-progress",
    ]
    ckpt = checkpoint_folder(str(path))
    cmd = [
        sys.executable,
        "-c",
        "import sys; from copyhead_jax.cli import main; sys.exit(main())",
        *argv,
    ]
    env = dict(__import__("os").environ, PYTHONPATH=str(ROOT))
    stop_after_second = (
        "import os, signal, sys\n"
        "import copyhead_jax.runner.chunks as chunks\n"
        "save = chunks.atomic_save_npz\n"
        "def save_then_interrupt(path, *a, **k):\n"
        "    save(path, *a, **k)\n"
        "    if path.name == 'chunk_00001.npz':\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "chunks.atomic_save_npz = save_then_interrupt\n"
        "from copyhead_jax.cli import main\n"
        "sys.exit(main())\n"
    )
    stopped = subprocess.run(
        [sys.executable, "-c", stop_after_second, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    err = stopped.stderr
    assert stopped.returncode == 130, err
    assert f"finished work is kept in {ckpt}" in err, err
    n_kept = len(list(ckpt.glob("chunk_*.npz")))
    assert n_kept == 2, n_kept  # chain sets 0 and 1 kept, then the interrupt
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert not ckpt.exists()
    assert json.loads(again.stdout.splitlines()[0]) == json.loads(json.dumps(whole.to_dict()))
