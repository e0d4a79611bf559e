"""runner/memory.py: a chunk of runs fits the memory budget."""

import copyhead_jax as ch
from copyhead_jax.runner import chunk_size, per_run_bytes


def test_chunk_size_respects_memory_budget():
    cfg = ch.PAPER.replace(sweep=dict(memory_budget_gb=10.0))
    per_run = per_run_bytes(cfg)
    # at width 10,000: W^G is 4e8 bytes; weights + gradient + 2 Adam moments + temporaries
    assert 4 * 4e8 < per_run < 8 * 4e8
    c = chunk_size(cfg, 160)
    assert c * per_run <= 10 * 2**30 < (c + 1) * per_run
    assert chunk_size(cfg, 160, n_devices=4) % 4 == 0
    assert chunk_size(cfg.replace(sweep=dict(chunk_runs=3)), 160) == 3
