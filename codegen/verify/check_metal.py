"""Metal-strict check of the generated kernels: `python -m codegen check-metal`.

g++ compiling a `.metal` through the Metal host shim accepts C++ that Metal rejects.
This check rejects, in the user's code (what `#line N "ops.yaml"` attributes to the
registry: functors and their helpers), what the Metal Shading Language Specification
forbids of C++, each reported at its ops.yaml line with a message saying Metal does
not allow it:

- lexically, in the user's code only (codegen/verify/metal_lexical.py): the MSL specification's
  C++ restrictions (exceptions, `new`/`delete`, `virtual`, derived classes, `dynamic_cast`,
  `typeid`, the `noexcept` operator, `goto`, `register`, `thread_local`, lambdas before Metal
  3.2, a function named `main`), function-scope `static` variables, the C++ standard library
  (`std::`), compiler builtins (`__builtin_*`), the types Metal lacks (`double`, `long double`,
  `long long`), a pointer or reference (parameter, variable, member, return type) without an
  address space (`device`, `constant`, `thread`, `threadgroup`), and a program-scope variable or
  static data member outside the `constant` address space;
- by the compiler (g++, -O0, -fno-exceptions -fno-rtti -Werror=vla), over the whole
  translation unit: variable-length arrays, and every ordinary compile error;
- from the compiler's call graph (-fcallgraph-info): recursion (any cycle of calls through a
  function defined in the user's code), a call from the user's code to the C library (a
  function declared outside the shim, the project's Metal headers and c10/metal), and a call
  through a function pointer.

torch's c10/metal headers and the shim are system headers here: only the user's code is
held to these rules, and torch's warnings stay quiet.

It then runs the clang step (codegen/verify/clang_check.py): clang compiles, syntax only, every
unit macOS builds with Apple clang, each op's CPU kernel unit among them.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import clang_check
from ..build import kernel_include_dirs
from ..clang import ClangMissing, clang_command
from .finding import Finding
from .metal_lexical import is_user_file, lexical_findings
from ..emit.host_names import preprocess, strip_host_name_attributes

# ---- compiler: strict flags and the call graph ----------------------------------------

STRICT_FLAGS = ["-fno-exceptions", "-fno-rtti", "-Werror=vla", "-Wno-attributes"]
_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)(?=\n?\Z)")
_REWORD = [
    (re.compile(r"variable length array"), "Metal does not allow variable-length arrays"),
    (re.compile(r"exception handling disabled"), "Metal does not allow exceptions"),
    (re.compile(r"typeid.*-fno-rtti"), "Metal does not allow typeid (no run-time type information)"),
    (re.compile(r"dynamic_cast.*-fno-rtti"), "Metal does not allow dynamic_cast (no run-time type information)"),
]


def _reword(message: str) -> str:
    for pattern, says in _REWORD:
        if pattern.search(message):
            return says
    return message


_CI_NODE = re.compile(r'node: \{ title: "(?P<title>[^"]*)" label: "(?P<label>[^"]*)"')
_CI_EDGE = re.compile(r'edge: \{ sourcename: "(?P<src>[^"]*)" targetname: "(?P<dst>[^"]*)" label: "(?P<label>[^"]*)"')
_LOCATION = re.compile(r"(?P<file>[^:\\]+):(?P<line>\d+):(?P<col>\d+)(?=\n?\Z)")


Site = tuple[str, int, int]  # file, line, column


@dataclass
class CallGraph:
    """gcc's -fcallgraph-info: each function's name and where it is declared or defined, and
    each call (caller -> [(callee, call site)])."""
    names: dict[str, str]
    where: dict[str, Site]
    edges: dict[str, list[tuple[str, Site | None]]]


def _site(text: str) -> Site | None:
    loc = _LOCATION.search(text)
    return (loc.group("file"), int(loc.group("line")), int(loc.group("col"))) if loc else None


def parse_callgraph(text: str) -> CallGraph:
    graph = CallGraph({}, {}, {})
    for m in _CI_NODE.finditer(text):
        parts = m.group("label").split("\\n")
        graph.names[m.group("title")] = parts[0]
        site = _site(parts[1]) if len(parts) > 1 else None
        if site:
            graph.where[m.group("title")] = site
    for m in _CI_EDGE.finditer(text):
        graph.edges.setdefault(m.group("src"), []).append((m.group("dst"), _site(m.group("label"))))
    return graph


def recursion_findings(graph: CallGraph) -> list[Finding]:
    """Cycles of calls through a function defined in the user's code."""
    names, where, edges = graph.names, graph.where, graph.edges

    # Tarjan's strongly connected components, iteratively
    index, low, on_stack, stack, sccs, counter = {}, {}, set(), [], [], [0]
    for root in list(edges):
        if root in index:
            continue
        work = [(root, iter(edges.get(root, [])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w, _ in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges.get(w, []))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                sccs.append(comp)

    findings = []
    for comp in sccs:
        cyclic = len(comp) > 1 or any(dst in comp for dst, _ in edges.get(next(iter(comp)), []))
        if not cyclic:
            continue
        user = [n for n in comp if n in where and is_user_file(where[n][0])]
        if not user:
            continue
        calls = sorted((site, src, dst) for src in comp for dst, site in edges.get(src, [])
                       if dst in comp and site and is_user_file(site[0]))
        site, src, dst = calls[0] if calls else (where[user[0]], user[0], user[0])
        cycle = " -> ".join(sorted({names.get(n, n) for n in comp}))
        findings.append(Finding(site[0], site[1], site[2],
                                f"Metal does not allow recursion ({names.get(src, src)} calls "
                                f"{names.get(dst, dst)}; cycle: {cycle})"))
    return findings


# Declared first in the strict compile, so that a call into the C library compiles and the call
# graph names it (_C_LIBRARY), where a kernel unit (which includes none of them) says only that
# the name is not declared.
C_LIBRARY_HEADERS = ("stdio.h", "stdlib.h", "string.h", "ctype.h", "wchar.h", "errno.h", "locale.h", "time.h")
_C_LIBRARY = ("Metal has no C standard library: {name} (declared in {file}); use the Metal Standard "
              "Library (metal::) or c10::metal")
_INDIRECT = "Metal does not allow calls through a function pointer"


def call_findings(graph: CallGraph, include_dirs: list[Path]) -> list[Finding]:
    """Calls the user's code makes (the call site is in ops.yaml) that Metal has no callee for:
    a function declared outside the shim, the project's Metal headers, torch's c10/metal and the
    user's code (the C library: printf, malloc, rand, ...; the C++ library is the lexical rule's
    `std::`), or a call through a function pointer."""
    ours = tuple(str(Path(d).resolve()) + os.sep for d in include_dirs)
    findings, seen = [], set()
    for calls in graph.edges.values():
        for dst, site in calls:
            if not site or not is_user_file(site[0]):
                continue
            file = graph.where[dst][0] if dst in graph.where else ""
            if dst == "__indirect_call":
                message = _INDIRECT
            elif file and not is_user_file(file) and f"{os.sep}c++{os.sep}" not in file \
                    and not str(Path(file).resolve()).startswith(ours):
                message = _C_LIBRARY.format(name=dst.rpartition(":")[2], file=file)
            else:
                continue
            if (site, message) not in seen:  # each instantiation of a template calls it again
                seen.add((site, message))
                findings.append(Finding(*site, message))
    return sorted(findings)


def compile_findings(metal: Path, include_dirs: list[Path], compiler: str = "c++") -> tuple[list[Finding], str]:
    """Strict compile (-O0, call graph kept): the findings and the compiler's other output."""
    text = strip_host_name_attributes(preprocess(compiler, metal, include_dirs, C_LIBRARY_HEADERS))
    with tempfile.TemporaryDirectory(prefix="mpsgen-check-metal-") as tmp:
        obj = Path(tmp) / "kernels.o"
        r = subprocess.run([compiler, "-std=c++20", "-O0", "-c", "-fcallgraph-info", *STRICT_FLAGS,
                            "-x", "c++", "-", "-o", str(obj)],
                           input=text, capture_output=True, text=True)
        ci = obj.with_suffix(".ci")
        callgraph = ci.read_text() if ci.is_file() else ""
    findings = []
    for line in r.stderr.splitlines():
        m = _DIAGNOSTIC.match(line)
        if m:
            findings.append(Finding(m.group("file"), int(m.group("line")), int(m.group("col")),
                                    _reword(m.group("msg"))))
    if r.returncode and not findings:
        findings.append(Finding(str(metal), 1, 1, "compile failed:\n" + r.stderr[-2000:]))
    if r.returncode == 0:
        graph = parse_callgraph(callgraph)
        findings += recursion_findings(graph) + call_findings(graph, include_dirs)
    return findings, r.stderr


def check_file(metal: Path, include_dirs: list[Path], compiler: str = "c++") -> tuple[list[Finding], str]:
    """Every finding for one generated .metal (deduplicated, in line order) and the compiler's output."""
    found = lexical_findings(metal.read_text())
    compiled, stderr = compile_findings(metal, include_dirs, compiler)
    seen, unique = set(), []
    for f in sorted(found) + compiled:
        key = (f.file, f.line, f.message)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return sorted(unique), stderr


def main(generated: Path, ops: list[str] | None = None, compiler: str = "c++", verbose: bool = False) -> int:
    include_dirs = kernel_include_dirs()
    metals = sorted(generated.glob("*.metal"))
    if ops:
        metals = [m for m in metals if m.stem in ops]
        missing = set(ops) - {m.stem for m in metals}
        if missing:
            print(f"check-metal: no {generated}/<op>.metal for {', '.join(sorted(missing))}", file=sys.stderr)
            return 1
    try:
        clang = clang_command()
    except ClangMissing as e:
        print(f"check-metal: {e}", file=sys.stderr)
        return 1

    def timed(metal: Path):
        t0 = time.perf_counter()
        return metal, *check_file(metal, include_dirs, compiler), time.perf_counter() - t0

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mpsgen-check-clang-") as tmp:
        build_dir = Path(tmp)
        # the host units need the whole of generated/ (registration.cpp names every op)
        whole = not ops and (generated / "registration.cpp").is_file()
        units = (clang_check.host_units(build_dir, generated) if whole else []) + clang_check.kernel_units(metals)
        # the compilers run in subprocesses: threads keep the cores busy; the longest units go first
        with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
            host = [pool.submit(clang_check.check_unit, u, clang, build_dir) for u in units if u.source]
            strict = [pool.submit(timed, m) for m in metals]
            kernels = [pool.submit(clang_check.check_unit, u, clang, build_dir) for u in units if u.metal]
            results = [f.result() for f in strict]
            clang_results = [f.result() for f in host + kernels]

    rejected = 0
    for metal, findings, stderr, took in results:
        if findings:
            rejected += 1
            print(f"FAIL {metal.stem} ({took:.1f} s):")
            for f in findings:
                print(f"  {f}")
            if verbose:
                print(stderr)
        else:
            print(f"ok   {metal.stem} ({took:.1f} s)")
    print(f"check-metal: {len(metals)} op(s), {rejected} rejected "
          "(Metal-strict: the user's code in ops.yaml may use only what Metal allows)")

    clang_rejected = clang_check.report(clang_results, clang, verbose)
    if not whole:
        print("(host units not checked: they need a whole generated/ (registration.cpp) and no op names)")
    print(f"check-metal: {time.perf_counter() - start:.1f} s")
    return 1 if rejected or clang_rejected else 0
