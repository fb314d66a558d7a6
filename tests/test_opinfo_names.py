"""`opinfo:` validation (codegen/registry/opinfo_names.py) and OpInfo variants (issues 9 and 16).

A misspelt name, or a name that exists only as variants (`div`, `polygamma`), used to
yield 0 OpInfo samples silently. check_opinfo() says why, with close matches; it reads
op_db's names from a cache keyed on the installed torch, so generating stays fast.
`name[variant_test_name]` selects a variant, in the check and in mpsgen/samples.py.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpsgen.codegen.registry import opinfo_names
from mpsgen.codegen.registry.loader import load
from mpsgen.codegen.registry.opinfo_names import check_opinfo, parse
from mpsgen import samples as S

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
PYTHON = sys.executable


# ---- opinfo: validation ------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["hypot", "nn.functional.hardshrink", "polygamma[polygamma_n_1]",
                                  "div[floor_rounding]", "div[no_rounding_mode]", "round[decimals_3]"])
def test_check_opinfo_accepts_names_and_variants(spec):
    assert check_opinfo(spec) is None


def test_check_opinfo_accepts_every_shipped_entry():
    bad = {e.qualified_name: check_opinfo(e.opinfo) for op in REGISTRY.ops for e in op.entries if e.opinfo}
    assert not {k: v for k, v in bad.items() if v}


@pytest.mark.parametrize("spec,expected", [
    ("hypto", "no OpInfo named 'hypto' in torch's op_db; close matches: hypot"),
    ("hardshrink", "close matches: nn.functional.hardshrink"),
    ("div", "op_db has 'div' only as variants: div[no_rounding_mode], div[trunc_rounding], div[floor_rounding]"),
    ("polygamma", "only as variants: polygamma[polygamma_n_0], polygamma[polygamma_n_1]"),
    ("div[floor]", "op_db's 'div' has no variant 'floor' (it has: div[no_rounding_mode]"),
    ("div[flor_rounding]", "close matches: div[floor_rounding]"),
    ("hypot[x]", "op_db's 'hypot' has no variant 'x' (it has: hypot)"),
    ("div[floor_rounding", "expected an OpInfo name such as 'hypot' or 'name[variant_test_name]'"),
    ("two words", "expected an OpInfo name"),
])
def test_check_opinfo_rejects_with_reason_and_close_matches(spec, expected):
    reason = check_opinfo(spec)
    assert reason is not None and expected in reason, reason


def test_parse_opinfo():
    assert parse("div[floor_rounding]") == ("div", "floor_rounding")
    assert parse("nn.functional.gelu") == ("nn.functional.gelu", "")
    assert parse("div[") is None


_PROBE = """
import sys, time
t = time.perf_counter()
from mpsgen.codegen.registry.opinfo_names import check_opinfo
print(check_opinfo("div"))
print("op_db imported:", "torch.testing._internal.common_methods_invocations" in sys.modules)
print("torch imported:", "torch" in sys.modules)
"""


def _probe(env):
    out = subprocess.run([PYTHON, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return out.stdout


def test_opinfo_names_are_cached_per_torch_and_read_without_importing_torch(tmp_path):
    env = {**os.environ, "MPSGEN_CACHE_DIR": str(tmp_path)}
    # an empty cache folder of our own, ahead of build/: the first run imports op_db and writes it
    first = _probe(env)
    cache = tmp_path / "opinfo_names.json"
    assert "op_db imported: True" in first
    data = json.loads(cache.read_text())
    assert data["torch"].startswith(importlib.metadata.version("torch") + "|")
    assert "" in data["names"]["hypot"] and "floor_rounding" in data["names"]["div"]
    second = _probe(env)
    assert "only as variants" in second
    assert "op_db imported: False" in second and "torch imported: False" in second


def test_opinfo_cache_of_another_torch_or_corrupt_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setattr(opinfo_names, "_cache_dirs", lambda: [tmp_path])
    for content in ('{"format": 1, "torch": "0.0.1|1|1", "names": {"hypot": [""]}}', "not json"):
        (tmp_path / "opinfo_names.json").write_text(content)
        opinfo_names.opinfo_names.cache_clear()
        try:
            assert "div" in opinfo_names.opinfo_names()  # from op_db, not from the stale file
        finally:
            opinfo_names.opinfo_names.cache_clear()
        assert json.loads((tmp_path / "opinfo_names.json").read_text())["torch"] == opinfo_names._torch_key()


def test_opinfo_names_without_a_writable_cache_import_op_db(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(opinfo_names, "_cache_dirs", lambda: [blocker / "sub"])
    opinfo_names.opinfo_names.cache_clear()
    try:
        assert check_opinfo("div[trunc_rounding]") is None
    finally:
        opinfo_names.opinfo_names.cache_clear()


# ---- OpInfo variants in samples.py ------------------------------------------------------------

def test_opinfo_variant_syntax_selects_the_variant():
    o = S._opinfo("div[floor_rounding]")
    assert o is not None and o.name == "div" and o.variant_test_name == "floor_rounding"
    assert S._opinfo("div") is None  # only variants exist
    assert S._opinfo("polygamma[polygamma_n_1]").variant_test_name == "polygamma_n_1"


# ---- at generate time ---------------------------------------------------------------------------

def test_loader_reports_a_bad_opinfo_with_its_line(tmp_path):
    import yaml

    from mpsgen.codegen.registry.loader import RegistryError
    spec = yaml.safe_load((ROOT / "ops.yaml").read_text())
    exp = next(o for o in spec["ops"] if o["func"].startswith("exp("))
    path = tmp_path / "ops.yaml"
    path.write_text(yaml.safe_dump({"namespace": "mpsgen", "ops": [{**exp, "opinfo": "div"}]}, sort_keys=False))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.lstrip().startswith("opinfo:"))
    with pytest.raises(RegistryError) as info:
        load(path)
    assert f"ops.yaml:{line}: op 'exp', key 'opinfo': op_db has 'div' only as variants" in str(info.value)
