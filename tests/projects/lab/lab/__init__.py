"""Example project for diffgenome's end-to-end recording tests (one module per behaviour)."""

LOADED = True
