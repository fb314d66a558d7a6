"""How an ops.yaml entry becomes in-tree code: read from the target tree's native_functions.yaml
(parsed by torchgen, as torch's build parses it) and the headers that declare its dispatch stubs.

The pattern of 2026's in-tree MPS ops: an op whose CPU and CUDA kernels share one structured
`.out` function (`CPU, CUDA: heaviside_out`) calls a DispatchStub (`heaviside_stub`); the MPS
kernel registers itself for that stub (`REGISTER_DISPATCH(heaviside_stub, ...)` in a `.mm`) and
`MPS` joins the shared line. An entry that does not fit is refused with the reason: an export
never writes a patch that cannot build."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from ..registry.dtypes import DTYPES, OPMATH
from ..registry.model import Op
from ..torch_versions import FEATURES, gives
from . import tree as trees


class ExportError(ValueError):
    """An entry cannot be exported: the message says why (and names its ops.yaml line)."""


@dataclass(frozen=True)
class Stub:
    name: str  # heaviside_stub
    fn_type: str  # structured_binary_fn
    params: tuple[str, ...]  # the function pointer's parameter types: ("TensorIteratorBase&",)
    header: str  # BinaryOps.h: the ATen/native header declaring it

    @property
    def iterator(self) -> str:
        """The iterator type the kernel function takes (TensorIterator or TensorIteratorBase)."""
        return self.params[0].rstrip("&").strip().removeprefix("at::")


@dataclass(frozen=True)
class Plan:
    op: Op
    out_name: str  # heaviside.out: the row that gets MPS
    out_line: int  # its `- func:` line in native_functions.yaml
    dispatch_line: int  # the line `CPU, CUDA: heaviside_out` (1-based)
    dispatch_text: str  # that line as it is
    shared_kernel: str  # heaviside_out
    stubs: tuple[tuple[str, Stub], ...]  # (kernel, the stub it registers for): one, or one per `str` choice

    @property
    def headers(self) -> list[str]:
        return sorted({s.header for _, s in self.stubs})

    @property
    def new_dispatch_text(self) -> str:
        """`CPU, CUDA: k` -> `CPU, CUDA, MPS: k` (MPS after CUDA, as torch orders its keys)."""
        keys, kernel = self.dispatch_text.split(":", 1)
        names = [k.strip() for k in keys.split(",")]
        names.insert(names.index("CUDA") + 1, "MPS")
        indent = keys[: len(keys) - len(keys.lstrip())]
        return f"{indent}{', '.join(names)}:{kernel}"


_DECLARE = re.compile(r"DECLARE_DISPATCH\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_FN_TYPE = re.compile(r"using\s+(\w+)\s*=\s*void\s*\(\s*\*\s*\)\s*\(([^)]*)\)\s*;")


@functools.cache
def stubs(headers: Path) -> dict[str, Stub]:
    """Every DispatchStub the ATen/native headers declare, with its function pointer type."""
    fn_types: dict[str, tuple[str, ...]] = {}
    declared: list[tuple[str, str, str]] = []
    for header in sorted(headers.glob("*.h")):
        text = header.read_text(errors="replace")
        for m in _FN_TYPE.finditer(text):
            params = tuple(" ".join(p.split()) for p in m[2].split(",") if p.strip())
            fn_types.setdefault(m[1], tuple(re.sub(r"\s+\w+$", "", p) if not p.endswith("&") else p for p in params))
        declared += [(m[2], m[1], header.name) for m in _DECLARE.finditer(text)]
    return {name: Stub(name, t, fn_types.get(t, ()), h) for name, t, h in declared}


@dataclass(frozen=True)
class Target:
    """The target tree's native_functions.yaml, parsed."""

    text: str
    entries: list  # the yaml's rows as loaded (torchgen's LineLoader)
    groups: dict  # functional name -> torchgen NativeFunctionsGroup
    mps: object  # torchgen BackendIndex of MPS
    cuda: object
    cpu: object


def parse_target(t: trees.Tree, text: str | None = None) -> Target:
    """torchgen's parse of the tree's native_functions.yaml (or of `text`, its patched form)."""
    return _parsed(t.read(trees.NATIVE_FUNCTIONS) if text is None else text, t.read(trees.TAGS))


@functools.lru_cache(maxsize=4)
def _parsed(text: str, tags_text: str) -> Target:
    """Once per process and text (torchgen's parse takes 2 s; the exports of one tree all read the
    same): nothing changes a Target after it is made."""
    import yaml
    from torchgen.gen import LineLoader, get_grouped_native_functions, parse_native_yaml_struct
    from torchgen.model import DispatchKey, NativeFunctionsGroup

    tags = yaml.load(tags_text, Loader=yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader)
    valid_tags = {e["tag"] for e in tags}
    es = yaml.load(text, Loader=LineLoader)
    entries = [dict(e) for e in es]  # the rows as written, whatever torchgen does with them
    parsed = parse_native_yaml_struct(es, valid_tags, path=trees.NATIVE_FUNCTIONS)
    groups = {str(g.functional.func.name): g for g in get_grouped_native_functions(parsed.native_functions)
              if isinstance(g, NativeFunctionsGroup)}
    bi = parsed.backend_indices
    return Target(text, entries, groups, bi[DispatchKey.MPS], bi[DispatchKey.CUDA], bi[DispatchKey.CPU])


def _stub_for(kernel: str, op_name: str, known: dict[str, Stub]) -> Stub | None:
    """The stub a shared structured `.out` function calls, by torch's naming: heaviside_out
    calls heaviside_stub; special_laguerre_polynomial_l_out, laguerre_polynomial_l_stub;
    eq_Tensor_out (of eq.Tensor), eq_stub."""
    base = kernel[: -len("_out")] if kernel.endswith("_out") else kernel
    for name in (f"{base}_stub", f"{base.removeprefix('special_')}_stub", f"{op_name}_stub"):
        if name in known:
            return known[name]
    return None


_SCALAR = {"const Scalar&", "const c10::Scalar&", "const at::Scalar&"}
# how a stub's parameter spells each kind of argument the kernels read
_STUB_TYPES = {"Scalar": _SCALAR, "int": {"int64_t"}, "float": {"double"}, "bool": {"bool"}}


def _refusal(op: Op, version: str) -> str | None:
    """Why the entry's kernels cannot be in-tree kernels (yet) of a torch `version` tree, or None."""
    if op.given or (op.selector and op.selector.by_value):
        what = f"the value of `{op.selector.arg}`" if op.selector else "`Tensor?` combinations"
        return f"its kernels are chosen by {what}; export-pytorch does not write those yet"
    if op.shared_kernels:
        return (f"a choice runs another entry's kernel ({', '.join(op.shared_kernels.values())}); export-pytorch "
                "does not write those yet")
    if op.family == "ternary" and op.transport != "none" and not gives("ternary_alpha", version):
        return (f"torch {version}'s exec_ternary_kernel takes no Scalar arguments (REGISTER_TERNARY_ALPHA_OP and "
                f"exec_ternary_kernel's alpha are torch {FEATURES['ternary_alpha']}'s): its kernels need mpsgen's "
                "support/metal/mpsgen/ternary_alpha.h, which this tree lacks")
    if op.transport == "alpha" and op.alpha_type(op.alpha_arg) == "opmath" and any(
            r.compute in OPMATH and DTYPES[r.compute].kind == "integer" for r in op.all_registrations):
        return (f"its opmath alpha `{op.alpha_arg}` is an int for int8, int16 and uint8 in its kernels (c10/metal's "
                "opmath_t), where ATen's opmath type, which exec_*_kernel's scalar_arg_type would be, is the dtype")
    if op.family == "ternary" and op.transport == "params":
        return (f"its params struct reaches its ternary kernels through mpsgen's own binding: torch {version}'s "
                "exec_ternary_kernel takes one Scalar alpha, and torch has no exec_ternary_kernel_with_params")
    if op.transport == "params":
        names = ", ".join(p.name for p in op.params)
        if any(p.optional for p in op.params):
            return f"its params struct ({names}) carries optional values; export-pytorch does not write those yet"
        if {"T", "opmath"} <= {p.metal for p in op.params}:
            return (f"its params struct ({names}) mixes fields of the dtype and of its opmath type; torch's params "
                    "headers take one type parameter (kernels/Activation.h), which export-pytorch writes")
    if re.search(r"\bmpsgen::", op.functor):
        return ("its functor calls mpsgen:: functions (support/metal/mpsgen/complex_math.h for complex dtypes), "
                "which torch lacks")
    return None


def plan(op: Op, target: Target, t: trees.Tree, stub_name: str | None = None) -> Plan:
    """`stub_name`: the stub the `.out`'s shared kernel calls, where torch's naming does not lead to it
    (`--stub lerp.Tensor=lerp_kernel_tensor_weight`)."""
    where = f"ops.yaml:{op.loc.line} ({op.qualified_name})"
    if reason := _refusal(op, t.version):
        raise ExportError(f"{where}: {reason}")
    group = target.groups.get(op.qualified_name)
    if group is None:
        raise ExportError(f"{where}: the tree's native_functions.yaml has no structured op `{op.qualified_name}` "
                          "with a .out variant: an export adds an MPS kernel to an op aten has")
    aten_schema = str(group.functional.func)
    if aten_schema != str(op.schema):
        raise ExportError(f"{where}: its schema `{op.schema}` is not aten's `{aten_schema}`")
    out = group.out
    present = target.mps.get_kernel(out)
    if present is not None:
        raise ExportError(f"{where}: torch already runs {out.func.name} on MPS through `{present.kernel}` "
                          f"(native_functions.yaml:{out.loc.line}); replacing an in-tree MPS kernel is not "
                          "yet exported")
    cpu, cuda = target.cpu.get_kernel(out), target.cuda.get_kernel(out)
    if not (out.structured and cpu and cuda and cpu.kernel == cuda.kernel and out.structured_inherits == "TensorIteratorBase"):
        raise ExportError(f"{where}: {out.func.name} (native_functions.yaml:{out.loc.line}) has no structured "
                          "TensorIterator kernel shared by CPU and CUDA, so no DispatchStub for MPS to join; "
                          "a TORCH_IMPL_FUNC export is not yet written")
    declared = stubs(t.headers)
    if op.selector:  # torch's .out picks a stub by the value: each choice's kernel registers for its own
        if stub_name is not None:
            raise ExportError(f"{where}: --stub names one stub; its choices' kernels each register for the stub "
                              "of their name")
        chosen = []
        for kernel in op.kernels:
            if f"{kernel}_stub" not in declared:
                raise ExportError(f"{where}: the `{op.selector.arg}` choice's kernel `{kernel}` has no "
                                  f"`{kernel}_stub` in the tree's ATen/native headers: name each choice's kernel "
                                  f"after the stub {out.func.name}'s `{cpu.kernel}` calls for it")
            chosen.append((kernel, declared[f"{kernel}_stub"]))
    else:
        if stub_name is not None:
            stub = declared.get(stub_name)
            if stub is None:
                raise ExportError(f"{where}: --stub {stub_name}: the tree's ATen/native headers declare no such stub")
        else:
            stub = _stub_for(cpu.kernel, op.base_name, declared)
        if stub is None:
            near = sorted(n for n in declared if op.base_name in n.split("_"))
            raise ExportError(f"{where}: {out.func.name}'s shared kernel `{cpu.kernel}` calls no stub that the tree's "
                              f"ATen/native headers declare under its name; name the one it calls with --stub "
                              f"{op.qualified_name}=STUB" + (f" (declared: {', '.join(near)})" if near else ""))
        chosen = [(op.name, stub)]
    for kernel, stub in chosen:  # a choice's kernel may read fewer params than the op has (`params:`)
        reads = op.kernel_params(kernel)
        if stub.iterator not in ("TensorIterator", "TensorIteratorBase") or len(stub.params) != 1 + len(reads) \
                or any(t not in _STUB_TYPES[p.kind] for t, p in zip(stub.params[1:], reads)):
            raise ExportError(f"{where}: `{stub.name}` ({stub.header}) takes ({', '.join(stub.params)}); the entry's "
                              f"kernel `{kernel}` reads the iterator{''.join(f', {p.kind} {p.name}' for p in reads)}")
    lines = target.text.splitlines()
    dispatch_line = _shared_line(lines, out.loc.line, cpu.kernel)
    return Plan(op, str(out.func.name), out.loc.line, dispatch_line, lines[dispatch_line - 1], cpu.kernel,
                tuple(chosen))


def _shared_line(lines: list[str], start: int, kernel: str) -> int:
    """The 1-based number of the row's `CPU, CUDA...: kernel` line, after its `- func:` line."""
    for n in range(start, len(lines)):
        line = lines[n]
        if line.startswith("- func:"):
            break
        keys, _, value = line.partition(":")
        names = {k.strip() for k in keys.split(",")}
        if value.strip() == kernel and {"CPU", "CUDA"} <= names:
            return n + 1
    raise ExportError(f"native_functions.yaml:{start}: no `CPU, CUDA: {kernel}` line to add MPS to")
