"""Suite-wide settings, and an "op-output-match" section in pytest's summary: what
test_output_match compared with a widened oracle, what had no torch result, and the
OpInfo samples each entry bound or dropped (with the reason). The tests record these
with `record_property`, which pytest-xdist carries back from its workers.
"""
from __future__ import annotations

import gc
import os
import tempfile
from collections import Counter, defaultdict

import pytest


def pytest_configure(config):
    # pytest-xdist's workers share the cores: each gets its share of torch's intra-op threads
    # (the CPU kernels' launches and torch's own). With every worker on every core, the whole
    # suite took 1.6 times as long on 2 cores (test_ops' float32 and complex64 rows: 151 -> 93 s).
    # The tests' own Python subprocesses (the aten overrides', the recurrences') inherit it.
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch
        threads = max(1, (os.cpu_count() or 1) // workers)
        torch.set_num_threads(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)
    # OpInfo's samples are made once per run and (entry, dtype), then loaded (mpsgen/sample_cache.py):
    # a folder for this run, made before pytest-xdist starts its workers, which inherit it
    if not hasattr(config, "workerinput"):
        config._mpsgen_samples = tempfile.TemporaryDirectory(prefix="mpsgen-test-samples-")
        os.environ["MPSGEN_SAMPLE_CACHE"] = config._mpsgen_samples.name
    config.addinivalue_line(
        "markers", "quick: the subset `bash test.sh --quick` runs at every commit (under a minute on 2 cores): "
        "generate and the registry's errors, the run-time errors, the MPS stubs compiled as C++, the "
        "workflows, and op-output-match for one entry of each kind")


def pytest_unconfigure(config):
    if hasattr(config, "_mpsgen_samples"):
        os.environ.pop("MPSGEN_SAMPLE_CACHE", None)
        config._mpsgen_samples.cleanup()


def pytest_collection_finish(session):
    """What is alive once the tests are collected (torch, OpInfo's op_db, the registries: half a
    million objects) lives for the whole run: gc.freeze() keeps the collector from walking it
    again at every full collection. torch.library.opcheck's traces make garbage fast enough
    for that to be 7 % of their time."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def _generator_cache_in_a_temporary_folder():
    """`python -m codegen` keeps its stamps (codegen/emit/stamp.py) in a cache folder; the
    suite's many output folders would otherwise crowd the user's ~/.cache/mpsgen."""
    with tempfile.TemporaryDirectory(prefix="mpsgen-test-cache-") as folder:
        old = os.environ.get("MPSGEN_CACHE_DIR")
        os.environ["MPSGEN_CACHE_DIR"] = folder
        yield
        if old is None:
            os.environ.pop("MPSGEN_CACHE_DIR", None)
        else:
            os.environ["MPSGEN_CACHE_DIR"] = old


def _props(reports):
    for report in reports:
        if getattr(report, "when", "call") != "call":
            continue
        props = dict(getattr(report, "user_properties", ()) or ())
        if "opinfo" in props:
            yield report, props


def pytest_terminal_summary(terminalreporter):
    reports = [r for key in ("passed", "failed", "xfailed", "xpassed") for r in terminalreporter.stats.get(key, ())]
    found = sorted(_props(reports), key=lambda rp: rp[0].nodeid)
    if not found:
        return
    tr = terminalreporter
    tr.section("op-output-match")

    widened = [(r, p["widened_oracle"]) for r, p in found if p.get("widened_oracle")]
    tr.write_line(f"samples compared against a widened oracle (torch's CPU lacks the dtype; the reference ran "
                  f"in a wider dtype and was cast back): {sum(len(w) for _, w in widened)} in {len(widened)} tests")
    for r, w in widened:
        tr.write_line(f"  {_test_id(r)}: {len(w)}: {', '.join(w)}")

    no_ref = [(r, p["no_reference"]) for r, p in found if p.get("no_reference")]
    tr.write_line(f"samples with no torch result (torch rejects the input): "
                  f"{sum(len(n) for _, n in no_ref)} in {len(no_ref)} tests")
    for r, n in no_ref:
        tr.write_line(f"  {_test_id(r)}: {len(n)}: {'; '.join(n[:3])}{' ...' if len(n) > 3 else ''}")

    # OpInfo samples per entry (binding hardly depends on the dtype: bound is shown as a range)
    per_entry: dict[str, dict] = defaultdict(lambda: {"opinfo": "", "bound": [], "dropped": Counter()})
    for r, p in found:
        opinfo, bound, dropped = p["opinfo"]
        e = per_entry[_test_id(r).rsplit("-", 1)[0]]
        e["opinfo"] = opinfo
        e["bound"].append(bound)
        e["dropped"].update(reason.split(": ", 1)[1] if ": " in reason else reason for reason in dropped)
    tr.write_line("OpInfo samples per entry (bound per dtype; dropped over all dtypes, with the reason):")
    for name, e in per_entry.items():
        lo, hi = min(e["bound"]), max(e["bound"])
        bound = f"{lo}" if lo == hi else f"{lo}-{hi}"
        opinfo = f"opinfo {e['opinfo']!r}" if e["opinfo"] else "no opinfo"
        tr.write_line(f"  {name} ({opinfo}): {bound} bound, {sum(e['dropped'].values())} dropped")
        for reason, count in e["dropped"].most_common():
            tr.write_line(f"      {count} x {reason}")


def _test_id(report) -> str:
    nodeid = report.nodeid
    return nodeid[nodeid.index("[") + 1:-1] if "[" in nodeid else nodeid
