"""An export verified offline, against the installed torch: `mpsgen export-pytorch ... --check`.

On a scratch tree of the installed torch's files (tree.scratch):
- apply: `git apply --check` takes the patch, and `git apply` applies it;
- dispatch: torchgen parses the patched native_functions.yaml, and its MPS backend index maps
  each exported `.out` overload to the kernel that CPU and CUDA share (the functional and in-place
  variants reach it through `structured_delegate`);
- derivatives: torchgen's autograd codegen loads the patched derivatives.yaml (rows the export added
  for an op torch has none for) and finds a formula for each argument they name;
- common_mps: the patched common_mps.py imports, each removed entry is gone from its list, each
  added XFAILLIST_GRAD entry is there;
- metal: each kernel file passes check-metal's Metal-strict checks and compiles through the Metal
  host shim with torch's c10/metal headers and nothing of mpsgen's (no support/metal), and none of
  its kernels' host names is one torch's bundled Metal library already has;
- kernels: each kernel file, preprocessed as the CPU build preprocesses a .metal, is the code of
  the registry's generated/<op>.metal: the kernels op-output-match ran are the patch's;
- host: each `.mm` compiles as Objective-C++ for aarch64-macos against torch's macOS wheel and the
  stand-in SDK, as torch's build compiles it (USE_MPS), and every torch symbol it uses is one
  libtorch exports.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import build
from ..emit.host_names import parse_instantiations, preprocess
from . import plan as plans, tree as trees
from .edits import grad_list, modifier_dicts
from .render import kernel_path, operation_path, params, params_path
from .run import Export


@dataclass(frozen=True)
class Outcome:
    check: str  # apply | dispatch | derivatives | common_mps | metal | kernels | host
    subject: str  # the file or op
    problems: tuple[str, ...]  # empty: passed

    def __str__(self) -> str:
        head = f"{'ok  ' if not self.problems else 'FAIL'} {self.check}: {self.subject}"
        return head + "".join(f"\n    {p}" for p in self.problems)


def apply(patch_text: str, root: Path) -> list[Outcome]:
    """`git apply --check`, then `git apply`, of the patch in `root` (outside any repository)."""
    patch_file = root.parent / "export.patch"
    patch_file.write_text(patch_text)
    for args in (["--check"], []):
        r = subprocess.run(["git", "apply", *args, str(patch_file)], cwd=root, capture_output=True, text=True)
        if r.returncode:
            return [Outcome("apply", f"git apply {' '.join(args)}".strip(), (r.stderr.strip(),))]
    return [Outcome("apply", "git apply --check, git apply", ())]


def _repeated_keys(entries: list, func_name: str) -> list[str]:
    """Dispatch keys given twice in the row of `func_name` (`MPS: a` beside `CPU, CUDA, MPS: b`),
    which torchgen takes silently, the last one winning."""
    for entry in entries:
        if entry.get("func", "").startswith(func_name + "("):
            keys = [k.strip() for line in entry.get("dispatch", {}) for k in str(line).split(",")]
            return sorted({k for k in keys if keys.count(k) > 1})
    return []


def dispatch(result: Export, t: trees.Tree) -> list[Outcome]:
    try:
        target = plans.parse_target(t)
    except Exception as e:  # torchgen's own errors: AssertionError, ParseError, ...
        return [Outcome("dispatch", trees.NATIVE_FUNCTIONS, (f"torchgen cannot parse it: {type(e).__name__}: {e}",))]
    out = []
    for p in result.plans:
        problems = [f"{p.out_name}'s dispatch gives {k} twice" for k in _repeated_keys(target.entries, p.out_name)]
        group = target.groups.get(p.op.qualified_name)
        if group is None:
            problems.append(f"torchgen finds no structured group {p.op.qualified_name}")
        else:
            kernel = target.mps.get_kernel(group.out)
            if kernel is None or kernel.kernel != p.shared_kernel:
                problems.append(f"MPS maps {group.out.func.name} to {kernel.kernel if kernel else 'nothing'}, "
                                f"not {p.shared_kernel}")
            for f in (group.functional, group.inplace):
                if f is not None and f.structured_delegate != group.out.func.name:
                    problems.append(f"{f.func.name} does not delegate to {group.out.func.name}")
        out.append(Outcome("dispatch", f"{p.op.qualified_name} -> MPS: {p.shared_kernel}", tuple(problems)))
    return out


def common_mps(result: Export, t: trees.Tree) -> list[Outcome]:
    path = t.root / trees.COMMON_MPS
    problems = []
    spec = importlib.util.spec_from_file_location("torch.testing._internal._mpsgen_exported_common_mps", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        problems.append(f"does not import: {type(e).__name__}: {e}")
    else:
        sys.modules.pop(spec.name, None)
    tree = ast.parse(path.read_text())
    grad = grad_list(tree)
    lists = {name: {k.value: v for k, v in zip(d.keys, d.values) if isinstance(k, ast.Constant)}
             for name, d in [*modifier_dicts(tree), *([("XFAILLIST_GRAD", grad)] if grad else [])]}
    for e in result.list_edits:
        entry = lists.get(e.list_name, {}).get(e.key)
        if e.added:
            if entry is None:
                problems.append(f"{e.list_name}[{e.key!r}] is not there")
        elif e.kept:
            kept = tuple(ast.unparse(x) for x in entry.elts) if isinstance(entry, ast.List) else None
            if kept != e.kept:
                problems.append(f"{e.list_name}[{e.key!r}] is {ast.unparse(entry) if entry else 'gone'}, "
                                f"expected [{', '.join(e.kept)}]")
        elif entry is not None:
            problems.append(f"{e.list_name}[{e.key!r}] is still there")
    return [Outcome("common_mps", trees.COMMON_MPS, tuple(problems))]


def derivatives(result: Export, t: trees.Tree) -> list[Outcome]:
    """torchgen's autograd codegen reads the patched derivatives.yaml against the patched
    native_functions.yaml, and finds a formula for each argument the added rows name."""
    if not result.derivatives:
        return []
    from torchgen.packaged.autograd.load_derivatives import load_derivatives

    # torchgen caches what it loaded by path for the process: each load reads copies of its own
    with tempfile.TemporaryDirectory(prefix="mpsgen-derivatives-") as tmp:
        paths = [Path(tmp) / Path(rel).name for rel in (trees.DERIVATIVES, trees.NATIVE_FUNCTIONS, trees.TAGS)]
        for rel, path in zip((trees.DERIVATIVES, trees.NATIVE_FUNCTIONS, trees.TAGS), paths):
            shutil.copyfile(t.root / rel, path)
        try:
            infos, _ = load_derivatives(*map(str, paths))
        except Exception as e:  # torchgen's own errors
            return [Outcome("derivatives", trees.DERIVATIVES, (f"torchgen cannot load it: {type(e).__name__}: {e}",))]
    out = []
    for p in result.plans:
        if p.op.qualified_name not in result.derivatives:
            continue
        info = next((v for k, v in infos.items() if str(k) == str(p.op.schema.signature())), None)
        found = set()
        for d in (info or {}).values():
            for derivative in d.derivatives:
                found |= set(derivative.var_names)
        missing = [d.arg for d in p.op.derivatives if d.arg not in found]
        out.append(Outcome("derivatives", f"{p.op.qualified_name}: {', '.join(d.arg for d in p.op.derivatives)}",
                           (f"torchgen finds no formula for {', '.join(missing)}",) if missing else ()))
    return out


def in_tree_include_dirs(t: trees.Tree) -> list[Path]:
    """What an in-tree kernel file's includes resolve to here: the Metal host shim and the CPU
    launcher, the tree's aten/src (its kernels' headers), then torch's c10/metal; not mpsgen's
    own Metal headers (support/metal)."""
    return [build.SHIM_INCLUDE, build.CPU_SUPPORT, t.root / "aten" / "src", build.torch_include()]


def metal(result: Export, t: trees.Tree, bundled: frozenset[str] | None) -> list[Outcome]:
    from ..verify import check_metal

    out = []
    compiler = build.kernel_compiler()
    for p in result.plans:
        path = t.root / kernel_path(p.op)
        problems = []
        try:
            findings, _ = check_metal.check_file(path, in_tree_include_dirs(t))
            problems += [str(f) for f in findings]
            names = {k.host_name for k in parse_instantiations(preprocess(compiler, path, in_tree_include_dirs(t)))}
            if not names:
                problems.append("registers no kernels")
            taken = sorted(names & bundled) if bundled is not None else []
            if taken:
                problems.append(f"torch's bundled Metal library already has {len(taken)} of its kernels: "
                                + ", ".join(taken[:4]))
        except RuntimeError as e:  # the preprocessor failed: an include or macro torch lacks
            problems.append(str(e).strip()[-1500:])
        out.append(Outcome("metal", kernel_path(p.op), tuple(problems)))
    return out


def _code(preprocessed: str, leave_out: Path | None = None) -> list[str]:
    """The preprocessor's output without its line markers and blank lines, and without the lines
    of headers under `leave_out` (mpsgen's own Metal headers, which the generated .metal may
    include for functions its functor does not call)."""
    code, skipping = [], False
    under: dict[str, bool] = {}  # per file named: the markers name a few files thousands of times
    for line in preprocessed.splitlines():
        if line.startswith("#"):
            m = re.match(r'# \d+ "([^"]*)"', line)
            if m and leave_out is not None:
                if m[1] not in under:
                    under[m[1]] = Path(m[1]).resolve().is_relative_to(leave_out.resolve())
                skipping = under[m[1]]
            continue
        if line.strip() and not skipping:
            code.append(line.rstrip())
    return code


_PARAMS_DECLARATIONS = re.compile(r"template <typename T> struct \w+ \{[^}]*\};|typedef \w+<[^;]*> \w+;")


def _kernels_code(lines: list[str], op, p) -> str:
    """The code of the functor and its registrations: for an op with a params struct, without the
    struct and its typedefs (the export's is torch's one-parameter form, `EluParams<opmath_t<half>>`,
    mpsgen's `elu_params<half>` with opmath_t<T> fields: both rendered from the one list of fields)
    and with the export's typedef names spelled as mpsgen's."""
    text = " ".join(lines)
    if p is not None:
        text = _PARAMS_DECLARATIONS.sub("", text).replace(f"{p.struct}_", f"{op.name}_params_")
    return " ".join(text.split())


def same_kernels(result: Export, t: trees.Tree, generated: Path) -> list[Outcome]:
    """The exported kernels are the mpsgen build's: the kernel file (with torch's headers alone) and
    generated/<op>.metal, each preprocessed through the shim as the CPU build preprocesses it, are
    the same code, line markers aside. The kernels that op-output-match ran are the patch's."""
    compiler = build.kernel_compiler()
    out = []
    for p in result.plans:
        ours = generated / f"{p.op.name}.metal"
        problems = []
        if not ours.is_file():
            problems.append(f"{ours} is missing: run generate first")
        else:
            a = _kernels_code(_code(preprocess(compiler, t.root / kernel_path(p.op), in_tree_include_dirs(t)),
                                    leave_out=t.root / params_path(p.op)), p.op, params(p.op))
            b = _kernels_code(_code(preprocess(compiler, ours, build.kernel_include_dirs()),
                                    leave_out=build.METAL_INCLUDE), p.op, params(p.op))
            if a != b:
                n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                problems.append(f"not the code of {ours}: after preprocessing, from character {n}: "
                                f"{a[max(0, n - 60):n + 60]!r} here, {b[max(0, n - 60):n + 60]!r} there")
        out.append(Outcome("kernels", f"{kernel_path(p.op)} is the code of {ours.name}", tuple(problems)))
    return out


def host(result: Export, t: trees.Tree, objects: Path) -> list[Outcome]:
    from ..verify import macos_build, macos_sdk, macos_symbols

    folder = macos_sdk.torch_folder()
    headers = folder / "torch" / "include"
    # the tree's own headers first (an exported params header), as torch's build finds them; __FILE__
    # in them named from the tree's root (pytorch/...), so that the same code in another scratch
    # tree is the same object, which the object cache shares
    flags = [f"-I{t.root / 'aten' / 'src'}", f"-ffile-prefix-map={t.root}{os.sep}=pytorch{os.sep}",
             *macos_build.compile_flags(build.ROOT, objects, headers), "-DUSE_MPS"]
    objects.mkdir(parents=True, exist_ok=True)
    out = []
    for p in result.plans:
        source = t.root / operation_path(p.op)
        compiled = macos_build.compile_unit(source, flags, objects)
        problems = [] if compiled.ok else [compiled.messages.strip()[-3000:]]
        if compiled.ok:  # linked as the Mac links (Apple's libc++), and with zig's libc++ to tell its symbols
            image = objects / (source.stem + ".dylib")
            linked = macos_build.link([compiled.object], image)
            with_libcxx = macos_build.link([compiled.object], image.with_suffix(".libcxx.dylib"), mac_libcxx=False)
            if linked.returncode:
                problems.append(f"does not link: {linked.stderr.strip()[-1500:]}")
        if not problems:
            undefined = macos_symbols.read_object(image).undefined
            libcxx = macos_symbols.read_object(image.with_suffix(".libcxx.dylib")).undefined \
                if with_libcxx.returncode == 0 else None
            r = macos_symbols.resolve([macos_symbols.read_object(compiled.object, source.name)], undefined, libcxx,
                                      macos_sdk.symbols(folder), macos_sdk.libsystem_exports())
            names = macos_symbols.demangle(sorted(r.unresolved))
            problems += [f"unresolved on a Mac: {names.get(s, s)}" for s in sorted(r.unresolved)]
        out.append(Outcome("host", operation_path(p.op), tuple(problems)))
    return out


def check_all(result: Export, patch_text: str, work: Path, generated: Path,
              bundled: frozenset[str] | None = None, base: Path | None = None) -> list[Outcome]:
    """Every check, on a fresh copy of the tree the export was made against (`base`; by default
    a scratch tree of the installed torch's files) under `work`, to which the patch is applied;
    `generated`: the registry's generated/, whose kernels the exported ones must be."""
    if base is None:
        t = trees.scratch(work / "tree")
    else:
        shutil.copytree(base, work / "tree")
        t = trees.Tree((work / "tree").resolve(), (work / "tree" / trees.NATIVE_HEADERS).resolve(), real=False)
    outcomes = apply(patch_text, t.root)
    if outcomes[0].problems:
        return outcomes
    if bundled is None:
        from ..verify import macos_sdk

        bundled = macos_sdk.metal_kernels()
    return [*outcomes, *dispatch(result, t), *derivatives(result, t), *common_mps(result, t), *metal(result, t, bundled),
            *same_kernels(result, t, generated), *host(result, t, work / "objects")]
