"""mpsgen: generate PyTorch MPS (and CPU-hosted) elementwise ops from ops.yaml.

Flow, one direction: loader (ops.yaml -> validated model) -> render (Jinja
templates) -> writer (generated/). See README.md.
"""
