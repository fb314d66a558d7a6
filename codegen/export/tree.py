"""The files of a PyTorch checkout that an export reads or changes, by their in-tree paths.

A real checkout is given with `--torch-tree DIR`. Without one, the installed torch's wheel
stands in: it ships native_functions.yaml and tags.yaml (under torchgen/packaged), derivatives.yaml,
common_mps.py and the ATen/native headers that declare the dispatch stubs, which `scratch()` lays
out at the paths they have in pytorch/pytorch."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
TAGS = "aten/src/ATen/native/tags.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
KERNELS = "aten/src/ATen/native/mps/kernels"
OPERATIONS = "aten/src/ATen/native/mps/operations"
NATIVE_HEADERS = "aten/src/ATen/native"  # BinaryOps.h, UnaryOps.h, ...: where the stubs are declared


def _wheel_files() -> dict[str, Path]:
    """In-tree path -> the installed torch's copy."""
    import torch
    import torchgen

    packaged = Path(torchgen.__file__).parent / "packaged"
    torch_dir = Path(torch.__file__).parent
    return {
        NATIVE_FUNCTIONS: packaged / "ATen" / "native" / "native_functions.yaml",
        TAGS: packaged / "ATen" / "native" / "tags.yaml",
        DERIVATIVES: packaged / "autograd" / "derivatives.yaml",
        COMMON_MPS: torch_dir / "testing" / "_internal" / "common_mps.py",
    }


def installed_headers() -> Path:
    """The installed torch's ATen/native headers (the stubs' declarations)."""
    import torch

    return Path(torch.__file__).parent / "include" / "ATen" / "native"


@dataclass(frozen=True)
class Tree:
    """A PyTorch source tree: a real checkout, or the wheel's files laid out by scratch()."""

    root: Path
    headers: Path  # the folder of BinaryOps.h, UnaryOps.h, ...
    real: bool  # a checkout (its kernels/ and operations/ are there to read and change)

    @property
    def version(self) -> str:
        """The tree's torch release: a checkout's version.txt (`2.15.0a0`), else the installed torch's."""
        path = self.root / "version.txt"
        if self.real and path.is_file():
            return path.read_text().strip()
        from ..registry.opinfo_names import torch_version
        from ..torch_versions import release

        return release(torch_version())

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text()

    def exists(self, rel: str) -> bool:
        return (self.root / rel).is_file()


def checkout(root: Path) -> Tree:
    """A PyTorch checkout given by the user: it must hold native_functions.yaml."""
    root = root.resolve()
    if not (root / NATIVE_FUNCTIONS).is_file():
        raise FileNotFoundError(f"{root} is not a PyTorch checkout: it has no {NATIVE_FUNCTIONS}")
    return Tree(root, root / NATIVE_HEADERS, real=True)


def scratch(into: Path) -> Tree:
    """The installed torch's files at their in-tree paths under `into` (created), with the
    ATen/native headers that declare the stubs (BinaryOps.h, ...) where a checkout has them."""
    for rel, source in _wheel_files().items():
        target = into / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for header in installed_headers().glob("*.h"):
        shutil.copyfile(header, into / NATIVE_HEADERS / header.name)
    return Tree(into.resolve(), into.resolve() / NATIVE_HEADERS, real=False)
