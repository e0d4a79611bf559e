"""Sharding the run axis over devices gives the same arrays as one device."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

SCRIPT = textwrap.dedent(
    """
    import json, sys, numpy as np, jax, copyhead_jax as ch
    assert len(jax.devices()) == 4, jax.devices()
    cfg = ch.TINY.replace(solver=dict(max_epochs=60, min_epochs=60),
                          sweep=dict(P=(2, 4, 8), n_seeds=2, chunk_runs=4))
    out = {}
    for n in (1, 4):
        res = ch.run_sweep(cfg.replace(sweep=dict(n_devices=n)), progress=False)
        out[n] = {k: res[k].tolist() for k in ("c1", "cG", "U", "train_loss", "stop_epoch")}
    print(json.dumps(out))
    """
)


def test_sharded_sweep_equals_single_device():
    # four host devices, beside the suite's own XLA flags (tests/conftest.py: its faster compiling)
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4"
    env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for k in out["1"]:
        # the runs are independent vmap lanes: partitioning them over devices changes no
        # arithmetic, only where it happens; float32 reassociation inside XLA's per-device
        # programs is the only allowed difference
        np.testing.assert_allclose(out["4"][k], out["1"][k], rtol=1e-5, atol=1e-6, err_msg=k)
