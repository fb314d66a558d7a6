"""The torch releases mpsgen is tested with (issue 48), and the one requirement that says so.

The generator is Python; only the compiled extension is tied to a torch, and it is compiled on
the user's machine against the torch installed there (codegen/build.py), which records it
(support/host/module.cpp; another torch at import is an ImportError, mpsgen/runtime.py). So
mpsgen installs beside any torch of the range below, and each release of it is one line of
`.ci/run` (`bash .ci/torch-version X`: mpsgen's own ops built, the main job, the macOS
cross-build against that torch's macOS wheel, the quick tests). docs/torch-versions.md lists
what differs between them and how the build meets it. Adding a release: TESTED, the range (in
pyproject.toml too), its `.ci/run` line and that table.
"""
from __future__ import annotations

TESTED = ("2.13.0", "2.14.1")  # the default (requirements.txt's CPU wheel) first
# pip's form; pyproject.toml's dependencies and build requirements say the same
# (tests/test_torch_version.py), and so does the pyproject.toml of a project from `mpsgen init`
REQUIREMENT = "torch>=2.13.0,<2.15"
