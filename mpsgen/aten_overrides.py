"""Run the `implements: aten` entries through torch's own aten ops, on CPU, in a subprocess.

In a normal process `torch.heaviside` on CPU is torch's kernel, which is the oracle.
With MPSGEN_ATEN_CPU_OVERRIDES=1, `import mpsgen` registers our CPU kernels for the
aten ops instead, so one subprocess runs every sample through them:

    results = run(registry)                # generates the samples, runs the subprocess
    case = results[(entry.qualified_name, "float")]
    case.samples, case.dropped             # what samples.samples() gave (OpInfo + edge)
    case.replay                            # a LaunchLog-like callable: sample -> our result

The parent (no override) then compares each replayed result with torch's CPU result on
the same saved inputs, with samples.compare() (widened oracle and tolerances included),
so tests/test_ops.py and the main job judge aten entries like every other entry. The
subprocess also runs each sample's out= and in-place variants (where aten has them) and
`torch.library.opcheck` on the first OpInfo samples; `outcome.launches` is the CPU
executor's launch log of each call, which shows that our kernel ran.
"""
from __future__ import annotations

import atexit
import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch

from . import compute_harness, runtime
from .variant_checks import call as _call, compile_failure, opcheck_failure, variants as _variants
from .samples import TORCH_DTYPES, LaunchLog, Sample, entry_params, op_overload, registered_dtypes, samples

ENV = "MPSGEN_ATEN_CPU_OVERRIDES"
OPCHECK_SAMPLES = 1  # OpInfo samples per (entry, dtype) that opcheck runs on


@dataclass
class Outcome:
    """What one call did in the subprocess: its result or its error, and the launches."""

    result: object = None
    error: tuple[str, str] | None = None  # (exception type name, message)
    launches: list = field(default_factory=list)


@dataclass
class Case:
    """One (entry, registered dtype): its samples and what the subprocess made of them."""

    samples: list
    dropped: list
    outcomes: dict = field(default_factory=dict)  # (variant, sample name) -> Outcome
    opcheck: dict = field(default_factory=dict)  # sample name -> None (passed) or the failure
    # a kernel entry's: sample name -> None (torch.compile(fullgraph=True) ran our kernel and gave
    # the eager result bit for bit) or the failure
    compiled: dict = field(default_factory=dict)

    def replay(self, variant: str = "functional") -> "Replay":
        return Replay(self, variant)


class Replay:
    """A stand-in for the op, for samples.compare(): called with a sample's arguments, it
    returns what the subprocess computed for that sample (compare() passes the very
    tensors saved for it); `.last` is that call's launch log, as LaunchLog's."""

    def __init__(self, case: Case, variant: str):
        self.case, self.variant, self.last = case, variant, []
        self._by_args = {id(s.args[0]) if s.args else None: s.name for s in case.samples}

    def __call__(self, *args, **kwargs):
        name = self._by_args[id(args[0])]
        outcome = self.case.outcomes[(self.variant, name)]
        self.last = list(outcome.launches)
        if outcome.error is not None:
            kind, message = outcome.error
            raise (NotImplementedError if kind == "NotImplementedError" else RuntimeError)(f"{kind}: {message}")
        return outcome.result


def plan(registry, large: bool = False) -> dict[tuple[str, str], Case]:
    """The samples of every aten entry and registered dtype, on CPU. Without `large`, the
    large samples stay out: they run the same executor paths as any other entry's,
    and would make the file the subprocess reads hundreds of megabytes."""
    cases = {}
    for op in registry.aten_ops:
        for r in op.registrations:
            dropped: list = []
            found = samples(op.opinfo, entry_params(op), "cpu", TORCH_DTYPES[r.input], registered_dtypes(op),
                            large=large, dropped=dropped)
            cases[(op.qualified_name, r.input)] = Case(found, dropped)
    for op in registry.compute_ops:
        for t in op.dtypes if op.implements else ():
            dropped = []
            cases[(op.qualified_name, t)] = Case(compute_harness.samples(op, t, "cpu", dropped), dropped)
    return cases


def variant_names(registry) -> dict[str, dict]:
    """{entry: {variant: aten's operator name}} (`heaviside`, `heaviside.out`, `heaviside_`); a
    kernel entry's functional op is called even where it is aten's composite over the variants
    registered, and its out= names its outputs (`out_names`)."""
    found = {op.qualified_name: {v: op.schema_names[v] for v in op.variants} for op in registry.aten_ops}
    for op in registry.compute_ops:
        if op.implements:
            found[op.qualified_name] = {"functional": op.qualified_name, **{k: n for k, n in op.aten_variants},
                                        "out_names": [t.name for t in op.outputs], "compile": True}
    return found


def run(registry, large: bool = False, opcheck: bool = True) -> dict[tuple[str, str], Case]:
    """plan(), then one subprocess with the overrides that runs every case: it imports the
    package that loaded the registry's namespace here, from this process's sys.path."""
    package = runtime.package_of(registry.namespace)
    cases = plan(registry, large)
    variants = variant_names(registry)
    with tempfile.TemporaryDirectory(prefix="mpsgen-aten-") as tmp:
        inputs, outputs = Path(tmp) / "inputs.pt", Path(tmp) / "outputs.pt"
        torch.save({"variants": variants, "opcheck": opcheck,
                    "cases": {k: [(s.name, s.args, s.kwargs) for s in c.samples] for k, c in cases.items()}}, inputs)
        env = {**os.environ, ENV: "1", "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
        proc = subprocess.run([sys.executable, "-m", "mpsgen.aten_overrides", str(inputs), str(outputs), package],
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the aten-override subprocess failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        done = torch.load(outputs, weights_only=False)
    for key, case in cases.items():
        case.outcomes = {k: Outcome(*v) for k, v in done["outcomes"][key].items()}
        case.opcheck = done["opcheck"].get(key, {})
        case.compiled = done["compiled"].get(key, {})
    return cases


@lru_cache(maxsize=None)
def run_cached(ops_yaml: str, large: bool = False) -> dict[tuple[str, str], Case]:
    """run() once per process and registry. The workers of one pytest-xdist run share it:
    the first writes it to a temporary file (under a lock), the others read it; the file
    goes when its writer's process ends (a worker that comes later runs its own)."""
    from .codegen.registry.loader import load

    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run_id:
        return run(load(ops_yaml), large)
    path = Path(tempfile.gettempdir()) / f"mpsgen-aten-{run_id}-{hashlib.sha256(ops_yaml.encode()).hexdigest()[:12]}" \
                                         f"-{int(large)}.pt"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return torch.load(path, weights_only=False)
        cases = run(load(ops_yaml), large)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        torch.save(cases, tmp)
        os.replace(tmp, path)
        atexit.register(_remove, path)
        return cases


def _remove(path: Path) -> None:
    for p in (path, path.with_suffix(".lock")):
        p.unlink(missing_ok=True)


def row(registry, op, entry, metal_dtype: str, device: str, large: bool = True,
        dropped: list | None = None) -> tuple[list, object]:
    """(samples, op) of one op-output-match row (tests/test_ops.py, the main job): the
    entry's op in this process with its launch log (LaunchLog), or for an aten entry on
    CPU, where this process runs torch's own kernel, the override subprocess's samples
    (without the large ones, see plan()) and its Replay."""
    dtype = TORCH_DTYPES[metal_dtype]
    if op.implements and device == "cpu":
        case = run_cached(str(Path(registry.path).resolve()))[(entry.qualified_name, metal_dtype)]
        if dropped is not None:
            dropped.extend(case.dropped)
        return case.samples, case.replay()
    found = samples(entry.opinfo, entry_params(entry), device, dtype, registered_dtypes(op), large=large,
                    dropped=dropped)
    return found, LaunchLog(op_overload(op.impl_namespace or registry.namespace, entry.qualified_name),
                            runtime.extension(registry.namespace))


def _child(inputs: str, outputs: str, package: str) -> int:
    """The subprocess: every saved sample through torch's aten ops, with our CPU kernels."""
    assert os.environ.get(ENV) == "1"
    import importlib

    library = importlib.import_module(package).library
    C = runtime.extension(library.NAMESPACE)
    assert C.register_aten_cpu_overrides() is False  # loading the package registered them
    data = torch.load(inputs, weights_only=False)
    outcomes, opchecks, compiled = {}, {}, {}
    for (entry, dtype), found in data["cases"].items():
        names = data["variants"][entry]
        fn = op_overload("aten", names["functional"])
        per = outcomes[(entry, dtype)] = {}
        opinfo_seen = 0
        for name, args, kwargs in found:
            functional = _call(C, fn, args, kwargs)
            per[("functional", name)] = functional
            for variant, outcome in _variants(C, names, args, kwargs, functional).items():
                per[(variant, name)] = outcome
            if data["opcheck"] and name.startswith("opinfo[") and opinfo_seen < OPCHECK_SAMPLES:
                opinfo_seen += 1
                opchecks.setdefault((entry, dtype), {})[name] = opcheck_failure(fn, Sample(name, args, kwargs))
                if names.get("compile"):
                    compiled.setdefault((entry, dtype), {})[name] = compile_failure(C, fn, args, kwargs, functional)
    torch.save({"outcomes": outcomes, "opcheck": opchecks, "compiled": compiled}, outputs)
    return 0


if __name__ == "__main__":
    sys.exit(_child(*sys.argv[1:4]))
