"""Sigmoid attention through the commands: an exact MAP sweep of the width reduction (both
branches), the collapsed-HMC posterior of its runs, the theory's points, and the transition
command's refusal of the softmax-only profile method."""

import json

import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.observables import order_parameters
from copyhead_jax.sweep.finite_theory import seed_tokens
from tests.helpers import one_line_error


def test_sigmoid_sweep_then_sample_then_theory_points(tmp_path, capsys):
    out = tmp_path / "ex"
    argv = [
        *(
            "sweep --preset tiny --engine reduced --width inf --no-train-embeddings "
            "--attention sigmoid --P 4,16 --n-seeds 1 --out"
        ).split(),
        str(out),
        "--keep-params",
        "--no-progress",
        "--no-theory",  # the overlay's curve is the theory's own (tests/theory/test_heads.py)
    ]
    assert main(argv) == 0
    assert (out / "sweep.png").stat().st_size > 0
    res = {
        b: ch.SweepResult.load(out / f)
        for b, f in (("pool", "sweep_sigmoid.npz"), ("copy", "sweep_sigmoid_copy.npz"))
    }
    for r in res.values():
        assert r.config.model.attention == "sigmoid" and bool(np.all(r.ok))
        # the stored a_G is that of the stored head's mean attention, sigmoid(s - log L)
        # entrywise, over the run's own training set (an independent evaluation, float32)
        for i, P in enumerate(r.P):
            h = r.heads((i, 0))
            t = seed_tokens(r.config, 0, int(P))
            X = np.eye(r.config.task.V)[t]
            L = r.config.task.L
            U = np.asarray(h.embeddings(), np.float64)
            Phi = np.concatenate([X, np.broadcast_to(np.eye(L), (len(t), L, L))], axis=-1)
            s = np.einsum("pad,dn,nm,pbe,em->pab", Phi, U, np.asarray(h.W_G), Phi, U) / h.width
            A = np.mean(1.0 / (1.0 + L * np.exp(-s)), axis=0)
            aG = order_parameters(jnp.asarray(A)).cG
            np.testing.assert_allclose(float(aG), r["aG"][i, 0], rtol=1e-4, atol=1e-5)
    cap = capsys.readouterr().out
    assert "# sigmoid attention" in cap
    # its P* table's rows carry the head's own name, with no paper column (the paper has none)
    table = cap.split("# P* at N = inf")[1].split("saved ")[0].split("\n")[2:-1]
    assert table and all(r.startswith("sigmoid ") for r in table), table
    assert "softmax" not in cap and "and the paper" not in cap

    post = tmp_path / "post.npz"
    assert (
        main(
            [
                "sample",
                str(out / "sweep_sigmoid.npz"),
                "--iterations",
                "40",
                "--warmup",
                "20",
                "--adapt",
                "20",
                "--chains",
                "2",
                "--out",
                str(post),
                "--no-progress",
            ]
        )
        == 0
    )
    assert post.stat().st_size > 0
    assert "# sigmoid, collapsed HMC" in capsys.readouterr().out

    assert main("theory points --attention sigmoid --preset plain --L 6 --V 3 --json".split()) == 0
    pts = json.loads(capsys.readouterr().out)
    assert pts["inputs"]["attention"] == "sigmoid" and pts["P_c1"] is None
    assert pts["first_order"] is False and pts["P_aG_crossover"] > 0


def test_transition_refuses_the_profile_for_sigmoid_in_one_line(capsys):
    argv = (
        "transition --preset plain --L 4 --V 3 --width inf --attention sigmoid --n-seeds 1".split()
    )
    one_line_error(capsys, main(argv), r"softmax attention .* run --method ti")


def test_the_bayesian_theory_refuses_sigmoid_in_one_line(capsys):
    """§13's theory is derived for linear and softmax rows: no softmax numbers under another
    head's name."""
    for argv, pattern in (
        (["points", "--attention", "sigmoid", "--objective", "bayes"], "linear and softmax"),
        (
            ["scaling", "--attention", "sigmoid", "--objective", "bayes", "--L", "8,12"],
            "give --attention softmax",
        ),
    ):
        one_line_error(capsys, main(["theory", *argv]), pattern)
