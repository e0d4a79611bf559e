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


def test_a_refusal_never_reads_zero_and_never_reads_equal():
    """Sizes below 0.1 GiB in MiB (not "needs about 0.0 GiB, but 0.0 GiB"); two sizes that round
    alike in bytes, so the line always shows the need above what is available."""
    import re

    import pytest

    from copyhead_jax.runner import refuse_if_over

    cases = [(3 * 2**20, 2**20), (5 * 2**30, 2**30), (2**30 + 10, 2**30), (2**29, 2**24),
             (4 * 2**20, 1073)]  # a budget of 1e-6 GB
    for need, have in cases:
        with pytest.raises(ValueError) as e:
            refuse_if_over(need, have, "x", "y")
        got = re.search(r"needs about ([\d.,]+) (\w+) of memory, but ([\d.,]+) (\w+)", str(e.value))
        assert got, str(e.value)
        scale = {"GiB": 2**30, "MiB": 2**20, "bytes": 1}
        n, h = (float(got[i].replace(",", "")) * scale[got[i + 1]] for i in (1, 3))
        assert n > h > 0 and "0.0 " not in str(e.value), str(e.value)
        assert abs(n - need) <= 0.05 * scale[got[2]] and abs(h - have) <= 0.05 * scale[got[4]]
    refuse_if_over(1, 1, "x", "y")  # not over: no refusal
