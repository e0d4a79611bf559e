#!/usr/bin/env bash
# The benchmark suite on one accelerator, sized to fit one device call (< 8 minutes on an H200):
# the fused sweep vs the per-run JAX loop vs eager PyTorch (on the same GPU) at widths 1024 and
# 4096, SGLD vs blackjax.sgld, the whole-sweep sampler, the theory phase diagram vs scipy.
# blackjax is not in the device image: carry its wheel in .whl (see .library/device/README.md).
# Each bench has its own time limit, so one slow bench cannot starve the others. The JSONs
# land in benchmarks/results/ and, when $OUT is set, are copied there.
set -uo pipefail
cd "$(dirname "$0")/.."
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv || true
timeout 200 python3 benchmarks/bench_sweep.py --widths 1024 4096 --runs 1 64 --repeats 3
timeout 90 python3 benchmarks/bench_sgld.py --quick
timeout 60 python3 benchmarks/bench_sample_sweep.py --quick
timeout 90 python3 benchmarks/bench_theory.py --quick
if [ -n "${OUT:-}" ]; then cp benchmarks/results/bench_*.json "$OUT"/; fi
