"""Benchmark scripts (run each as ``python benchmarks/NAME.py``) and the suite runner,
``python -m benchmarks`` (see ``benchmarks/__main__.py``)."""
