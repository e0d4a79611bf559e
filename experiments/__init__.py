"""Reproduction experiments: one ``main(spec, out_dir)`` per paper artefact (see README.md)."""
