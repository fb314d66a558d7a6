"""OpInfo's samples, bound to an entry's schema, kept for the rest of a test run.

Making an OpInfo's samples costs 0.1 to 0.4 s per (OpInfo, dtype) on CPU (make_tensor and the
generators' own work), and the suite asks for the same ones in several modules: op-output-match,
opcheck, the gradient checks. Where $MPSGEN_SAMPLE_CACHE names a folder (tests/conftest.py sets
one per test run, shared by pytest-xdist's workers), the bound samples of one generator are
saved there the first time (torch.save) and loaded afterwards: new tensors each time, with the
values, dtypes, strides, storage offsets and shared storage the generator gave them (the
generators are seeded per sample: the values are the same as made again). A generator that
raises partway is never saved: it runs again, and raises again, each time. A caller may ask
for a list not to be kept (samples.py: OpInfo's reference_inputs, whose large tensors cost
more to write and read than to make).

Unset (the main job, a user's `mpsgen test`), nothing is kept: every call makes its samples.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable

import torch


def folder() -> Path | None:
    value = os.environ.get("MPSGEN_SAMPLE_CACHE")
    return Path(value) if value else None


def cached(key: tuple, make: Callable[[], list], keep: bool = True) -> list:
    """make()'s list, or the one saved under key (the OpInfo's name, the schema's params, the
    device, dtype and generator, and the torch version) by an earlier call of this run.
    keep=False: make() every time."""
    where = folder()
    if where is None or not keep:
        return make()
    path = where / (hashlib.sha256(repr((torch.__version__, *key)).encode()).hexdigest() + ".pt")
    try:
        return torch.load(path, weights_only=False)  # written by this run, below
    except FileNotFoundError:
        pass
    value = make()
    where.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        torch.save(value, f)
    os.replace(tmp, path)  # whole or absent: a worker reading meanwhile sees no half file
    return value
