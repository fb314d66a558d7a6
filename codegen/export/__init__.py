"""`mpsgen export-pytorch`: an ops.yaml entry as the in-tree PyTorch change that adds its MPS kernel.

tree.py finds the files a PyTorch checkout (or the installed torch's wheel, laid out at their
in-tree paths) holds; plan.py reads its native_functions.yaml and stub headers and decides how the
op is dispatched; render.py writes the kernel and host files from templates/pytorch/; edits.py
changes native_functions.yaml and common_mps.py; patch.py turns it all into a unified diff or
writes it into a tree; check.py verifies the result offline."""
