"""embeddings/runs.py: ``embedded_nuts`` summarises a tiny posterior."""

import numpy as np
import pytest

import copyhead_jax as ch


@pytest.mark.heavy  # compiles NUTS on the reduced embedded posterior: ~1 min on a loaded CPU
def test_embedded_nuts_summarises_a_tiny_posterior():
    from copyhead_jax.embeddings import embedded_nuts

    cfg = ch.PAPER.replace(task=dict(L=4, V=2, n_test=16), model=dict(attention="softmax"))
    r = embedded_nuts(cfg, 8, 8, "annealed", P_pad=8, n_chains=2, n_warmup=10, n_samples=10)
    assert r["dim"] > 0 and len(r["acceptance"]) == 2
    for k in ("a1", "aG", "gram_dist"):
        assert np.isfinite(r[k]["mean"]) and r[k]["sd"] >= 0
    assert r["gram_dist"]["mean"] > 0 and r["prior_gram_dist_rms"] > 0
    assert len(r["mean_gram_shift_chains"]) == 2
