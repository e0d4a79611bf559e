"""runner.harness: one writer per output, the fingerprint, and a progress bar of real runs over
checkpointed chunks (resume after an interruption gives the same arrays)."""

import hashlib
import json
import os

import numpy as np
import pytest

from copyhead_jax.runner import Progress, claim, fingerprint


def test_fingerprint_is_sha256_of_the_sorted_json_then_the_bytes():
    rec = {"b": [1, 2.5, "x"], "a": {"z": None, "y": True}}
    ref = hashlib.sha256(json.dumps(rec, sort_keys=True).encode())
    assert fingerprint(rec) == ref.hexdigest()[:16]  # the checkpoints' key, as written before
    ref.update(b"\x01\x02")
    ref.update(np.arange(3).tobytes())
    assert fingerprint(rec, b"\x01\x02", np.arange(3).tobytes(), digits=10) == ref.hexdigest()[:10]
    assert fingerprint({**rec, "c": 1}) != fingerprint(rec)


def test_claim_holds_the_output_and_finish_saves_then_cleans(tmp_path):
    out, ckpt = tmp_path / "sub" / "r.npz", tmp_path / "sub" / "r.npz.chunks"
    ckpt.mkdir(parents=True)
    orphans = [tmp_path / "sub" / ".r.npz.k1ll3d.tmp", ckpt / ".chunk_00000.npz.x.tmp"]
    for f in orphans:
        f.write_bytes(b"\0")
    (ckpt / "chunk_00000.npz").write_bytes(b"kept")
    lock = tmp_path / "sub" / "r.npz.lock"
    lock.write_text(f"{os.getppid()}\n")  # a live writer: refused before any work
    with pytest.raises(ValueError, match="being written by another process"):
        claim(out, ckpt=ckpt)
    lock.unlink()
    held = claim(out, ckpt=ckpt)
    assert lock.read_text().strip() == str(os.getpid())
    assert not any(f.exists() for f in orphans) and (ckpt / "chunk_00000.npz").exists()
    held.finish(lambda: out.write_bytes(b"result"))
    assert out.read_bytes() == b"result" and not ckpt.exists() and not lock.exists()
    assert claim(None).lock is None  # no output: nothing held


class _Bar:
    def __init__(self, total, **kw):
        self.total, self.n, self.postfix = total, 0, ""

    def update(self, k=1):
        self.n += k

    def refresh(self):
        pass

    def set_postfix_str(self, s):
        self.postfix = s

    def close(self):
        pass


def test_progress_counts_real_runs_and_resumes_the_same_arrays(tmp_path, monkeypatch):
    import copyhead_jax.runner.harness as harness

    monkeypatch.setattr(harness, "tqdm", _Bar)

    def compute(idx):  # the last chunk's padding repeats run 4 (run_chunked drops it)
        return {"x": np.asarray(idx, float) ** 2}

    whole = Progress(5, "t").chunks(
        n_runs=5, chunk=2, compute=compute, fingerprint="f", ckpt_dir=None
    )
    assert whole["x"].tolist() == [0, 1, 4, 9, 16]

    def stop(i, n):
        if i == 1:
            raise KeyboardInterrupt

    p = Progress(5, "t", n_chunks=3, on_chunk=stop)
    with pytest.raises(KeyboardInterrupt):
        p.chunks(n_runs=5, chunk=2, compute=compute, fingerprint="f", ckpt_dir=tmp_path)
    seen = []
    p = Progress(5, "t", n_chunks=3, on_chunk=lambda i, n: seen.append((i, n)))
    again = p.chunks(n_runs=5, chunk=2, compute=compute, fingerprint="f", ckpt_dir=tmp_path)
    np.testing.assert_array_equal(again["x"], whole["x"])
    # chunks 0 and 1 were saved before the stop (on_chunk runs after a chunk is saved)
    assert seen == [(2, 3)] and p.bar.n == 5 and "resumed 2 chunk(s)" in p.bar.postfix
