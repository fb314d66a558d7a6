"""Build mpsgen: `python setup.py build_ext --inplace` (run.sh), `pip install
--no-build-isolation .` or `pip wheel --no-build-isolation .`.

The extension of this repository's own ops (mpsgen._C) is built by the same build API a
project made with `mpsgen init` uses (codegen/package.py, installed as
mpsgen.codegen.package), which regenerates generated/ from ops.yaml first. Installed, the
generator and its files live under the one package `mpsgen`: codegen/ as mpsgen.codegen,
templates/ and support/ as its package data, generated/library.py as mpsgen/generated/.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # this checkout's mpsgen, also under pip (setuptools.build_meta)
from mpsgen.codegen.package import setup  # noqa: E402


def _files(folder: str) -> list[str]:
    """Every file under `folder`, relative to it (package data)."""
    return sorted(str(p.relative_to(ROOT / folder)) for p in (ROOT / folder).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def _subpackages(folder: str, package: str) -> list[str]:
    """The generator's stage subpackages (codegen/registry, emit, verify)."""
    return sorted(f"{package}.{p.parent.name}" for p in (ROOT / folder).glob("*/__init__.py"))


setup(
    ROOT,
    packages=["mpsgen", "mpsgen.codegen", *_subpackages("codegen", "mpsgen.codegen"),
              "mpsgen.templates", "mpsgen.support", "mpsgen.generated"],
    package_dir={"mpsgen": "mpsgen", "mpsgen.codegen": "codegen", "mpsgen.templates": "templates",
                 "mpsgen.support": "support", "mpsgen.generated": "generated"},
    package_data={"mpsgen.templates": _files("templates"), "mpsgen.support": _files("support")},
    exclude_package_data={"mpsgen.generated": ["*.cpp", "*.mm", "*.metal", "*.h"]},
)
