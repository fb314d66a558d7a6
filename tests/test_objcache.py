"""The object cache (codegen/objcache.py): a unit compiled once is linked from the cache by
every later build, at any path; a different unit, compiler or flag is another entry; a
corrupt or partial entry is compiled again, never linked; concurrent builds of one unit each
get a whole object; the cache stays within its bound.

The compiler is `c++` behind a script that logs each compile, so a hit is seen as no compile.
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

OBJCACHE = Path(__file__).resolve().parent.parent / "codegen" / "objcache.py"

UNIT = """\
#include "answer.h"
int answer() { return ANSWER + 1; }
"""


@pytest.fixture
def toolchain(tmp_path, monkeypatch):
    """A compiler that logs its compiles, a cache folder, and a unit that includes a header."""
    log = tmp_path / "compiles.log"
    cc = tmp_path / "cc"
    cc.write_text(f'#!/bin/sh\ncase " $* " in *" -c "*) echo "$*" >> "{log}";; esac\nexec c++ "$@"\n')
    cc.chmod(cc.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("MPSGEN_OBJECT_CACHE_DIR", str(tmp_path / "cache" / "objects"))
    monkeypatch.delenv("MPSGEN_OBJECT_CACHE", raising=False)
    monkeypatch.delenv("MPSGEN_OBJECT_CACHE_SIZE", raising=False)
    return cc, log


def _source(folder: Path, unit: str = UNIT, answer: int = 41) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "answer.h").write_text(f"#define ANSWER {answer}\n")
    (folder / "unit.cpp").write_text(unit)
    return folder / "unit.cpp"


def _compile(cc: Path, source: Path, flags=("-O2",), env=None) -> subprocess.CompletedProcess:
    obj = source.with_suffix(".o")
    # as torch's build.ninja writes it: its cflags end in -c, then `-c $in -o $out`
    return subprocess.run([sys.executable, str(OBJCACHE), str(cc), "-MMD", "-MF", f"{obj}.d", *flags,
                           f"-I{source.parent}", "-c", "-c", str(source), "-o", str(obj)],
                          capture_output=True, text=True, env={**os.environ, **(env or {})})


def _compiles(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "objects").glob("*/*.o"))


def test_a_unit_compiled_once_is_linked_from_the_cache_at_any_path(tmp_path, toolchain):
    cc, log = toolchain
    first = _source(tmp_path / "clone1")
    assert _compile(cc, first).returncode == 0
    assert _compiles(log) == 1 and len(_entries(tmp_path)) == 1
    second = _source(tmp_path / "elsewhere" / "clone2")  # the same code in another folder
    assert _compile(cc, second).returncode == 0
    assert _compiles(log) == 1  # a hit: nothing compiled
    assert second.with_suffix(".o").read_bytes() == first.with_suffix(".o").read_bytes()
    # the depfile names the unit and the header it includes, as -MMD does
    dep = Path(f"{second.with_suffix('.o')}.d").read_text()
    assert dep.startswith(f"{second.with_suffix('.o')}: {second}") and str(second.parent / "answer.h") in dep


def test_mpsgen_installed_elsewhere_gives_the_same_objects(tmp_path, toolchain, monkeypatch):
    """A project's units include mpsgen's support headers, whose TORCH_CHECKs expand __FILE__:
    the build's prefix maps (codegen/build.py) name them relative to mpsgen, so a project
    built with mpsgen installed in another venv hits the objects of the first."""
    from codegen import build

    cc, log = toolchain
    unit = ('#include "check.h"\n#include "c10.h"\n'
            'const char* where() { return here(); }\nconst char* there() { return in_torch(); }\n')
    for i, venv in enumerate(("venv1", "elsewhere/venv2")):
        support = tmp_path / venv / "site-packages" / "mpsgen" / "support"
        support.mkdir(parents=True)
        (support / "check.h").write_text("inline const char* here() { return __FILE__; }\n")
        torch_include = tmp_path / venv / "site-packages" / "torch" / "include"
        torch_include.mkdir(parents=True)
        (torch_include / "c10.h").write_text("inline const char* in_torch() { return __FILE__; }\n")
        monkeypatch.setattr(build, "SUPPORT", support)
        monkeypatch.setattr(build, "torch_home", lambda: torch_include.parent)
        project = tmp_path / f"project{i}"
        source = _source(project, unit)
        flags = ["-O2", "-g0", f"-I{support}", f"-I{torch_include}", *build.file_prefix_maps(project)]
        assert _compile(cc, source, flags).returncode == 0
    assert _compiles(log) == 1  # the second build was a hit
    # mpsgen's own checkout, whose support folder is in the project, gets no map of its own;
    # a venv in it holds torch: torch's map comes last, which the compilers take where both match
    checkout = tmp_path / "checkout"
    monkeypatch.setattr(build, "SUPPORT", checkout / "support")
    monkeypatch.setattr(build, "torch_home", lambda: checkout / ".venv" / "torch")
    assert build.file_prefix_maps(checkout) == [f"-ffile-prefix-map={checkout}{os.sep}=",
                                                f"-ffile-prefix-map={checkout / '.venv' / 'torch'}{os.sep}=torch{os.sep}"]


def _deps(source: Path, clone: Path) -> list[str]:
    """The files the unit's depfile names, the clone's folder written as `CLONE`."""
    text = Path(f"{source.with_suffix('.o')}.d").read_text().split(":", 1)[1]
    return [d.replace(str(clone), "CLONE") for d in text.split() if d != "\\"]


def test_a_hits_depfile_is_the_compilers(tmp_path, toolchain):
    """The files a unit #includes, but not those a `#line` names (the build's unity units name
    each generated stub so), nor system headers: a generated file rewritten with other line
    numbers must not make ninja compile the unit again."""
    cc, log = toolchain
    units = []
    for clone in ("clone1", "clone2"):
        folder = tmp_path / clone
        (folder / "stub.cpp").parent.mkdir(parents=True)
        (folder / "stub.cpp").write_text("// a generated stub, inlined below under its name\n")
        units.append(_source(folder, f'#include <vector>\n#line 1 "{folder / "stub.cpp"}"\n{UNIT}'))
        assert _compile(cc, units[-1]).returncode == 0
    assert _compiles(log) == 1
    compiled, hit = (_deps(unit, unit.parent) for unit in units)
    assert compiled == hit == ["CLONE/unit.cpp", "CLONE/answer.h"]


def test_other_code_or_flags_are_other_entries(tmp_path, toolchain):
    cc, log = toolchain
    assert _compile(cc, _source(tmp_path / "a")).returncode == 0
    assert _compile(cc, _source(tmp_path / "b", answer=42)).returncode == 0  # a header changed
    assert _compile(cc, _source(tmp_path / "c"), flags=("-O1",)).returncode == 0  # a flag changed
    assert _compiles(log) == 3 and len(_entries(tmp_path)) == 3


@pytest.mark.parametrize("damage", ["flipped byte", "truncated"])
def test_a_corrupt_or_partial_entry_is_compiled_again(tmp_path, toolchain, damage):
    cc, log = toolchain
    source = _source(tmp_path / "a")
    assert _compile(cc, source).returncode == 0
    good = source.with_suffix(".o").read_bytes()
    [entry] = _entries(tmp_path)
    data = bytearray(entry.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    source.with_suffix(".o").unlink()
    r = _compile(cc, source)
    assert r.returncode == 0 and "corrupt entry" in r.stderr
    assert _compiles(log) == 2  # compiled again, not linked from the damaged entry
    assert source.with_suffix(".o").read_bytes() == good
    assert _compile(cc, _source(tmp_path / "b")).returncode == 0 and _compiles(log) == 2  # rewritten whole


def test_concurrent_builds_of_one_unit_each_get_a_whole_object(tmp_path, toolchain):
    cc, log = toolchain
    sources = [_source(tmp_path / f"clone{i}") for i in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda s: _compile(cc, s), sources))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    objects = {s.with_suffix(".o").read_bytes() for s in sources}
    assert len(objects) == 1
    [entry] = _entries(tmp_path)  # one entry, whole: a later build links it
    before = _compiles(log)
    assert _compile(cc, _source(tmp_path / "later")).returncode == 0 and _compiles(log) == before
    assert not list((tmp_path / "cache" / "objects").glob("*/.tmp-*"))


def test_a_failed_compile_stores_nothing(tmp_path, toolchain):
    cc, _ = toolchain
    r = _compile(cc, _source(tmp_path / "a", unit="int broken( {\n"))
    assert r.returncode != 0 and "error" in r.stderr
    assert _entries(tmp_path) == []


def test_no_cache_compiles_and_stores_nothing(tmp_path, toolchain):
    cc, log = toolchain
    for folder in ("a", "b"):
        assert _compile(cc, _source(tmp_path / folder), env={"MPSGEN_OBJECT_CACHE": "0"}).returncode == 0
    assert _compiles(log) == 2 and _entries(tmp_path) == []


def test_the_cache_stays_within_its_bound(tmp_path, toolchain):
    cc, _ = toolchain
    for i in range(4):
        assert _compile(cc, _source(tmp_path / f"u{i}", answer=i)).returncode == 0
    sizes = [p.stat().st_size for p in _entries(tmp_path)]
    assert len(sizes) == 4
    bound = (max(sizes) * 2.5) / (1024 * 1024)  # room for two entries
    assert _compile(cc, _source(tmp_path / "u4", answer=4), env={"MPSGEN_OBJECT_CACHE_SIZE": str(bound)}).returncode == 0
    kept = _entries(tmp_path)
    assert len(kept) == 2 and sum(p.stat().st_size for p in kept) <= bound * 1024 * 1024


def test_a_kernel_unit_is_keyed_without_its_comment_lines(tmp_path, toolchain):
    """A kernel unit is written preprocessed, under comment lines (the build's own key, which
    names torch's folder): another clone's unit differs only there, and is a hit."""
    cc, log = toolchain
    for clone in ("clone1", "clone2"):
        folder = tmp_path / clone
        folder.mkdir()
        unit = folder / "hypot_kernels.cpp"
        (folder / "hypot.metal").write_text("// the op's kernels, before the build preprocessed them\n")
        unit.write_text(f"// mpsgen build key: made in {clone}\n# 1 \"{folder}/hypot.metal\"\n"
                        "int hypot_kernel() { return 3; }\n")
        assert _compile(cc, unit).returncode == 0
    assert _compiles(log) == 1
    # the hit's depfile is the compiler's: the unit alone, not the .metal its markers name
    # (ninja would compile it again whenever generate rewrote the .metal, key or not)
    compiled, hit = ([d for d in Path(f"{tmp_path / clone / 'hypot_kernels.o'}.d").read_text().split(":", 1)[1].split()
                      if d != "\\"] for clone in ("clone1", "clone2"))
    assert compiled == [str(tmp_path / "clone1" / "hypot_kernels.cpp")]
    assert hit == [str(tmp_path / "clone2" / "hypot_kernels.cpp")]


def test_the_same_clang_in_another_folder_is_the_same_compiler(tmp_path, toolchain):
    """clang's --version names the folder it runs from (InstalledDir): each clone's venv has
    its own copy of ziglang's clang, which compiles the same objects."""
    _, log = toolchain
    for venv in ("venv1", "venv2"):
        cc = tmp_path / venv / "cc"
        cc.parent.mkdir()
        cc.write_text('#!/bin/sh\ncase " $* " in *" --version "*) echo "clang version 22"; '
                      f'echo "InstalledDir: {cc.parent}"; exit 0;; *" -c "*) echo "$*" >> "{log}";; esac\n'
                      'exec c++ "$@"\n')
        cc.chmod(cc.stat().st_mode | stat.S_IEXEC)
        assert _compile(cc, _source(tmp_path / f"clone-{venv}")).returncode == 0
    assert _compiles(log) == 1


def test_the_compiler_is_asked_its_version_once_until_it_changes(tmp_path, toolchain, monkeypatch):
    """The compiler's identity is kept per binary (its path, size and modification time): one
    `--version` for a build's units, and a new one when another compiler takes the same path,
    whose objects are then other entries."""
    _, log = toolchain
    asked = tmp_path / "version.log"
    cc = tmp_path / "bin" / "cc"
    cc.parent.mkdir()

    def install(version: str) -> None:
        cc.write_text(f'#!/bin/sh\ncase " $* " in *" --version "*) echo x >> "{asked}"; echo "clang {version}"; '
                      f'exit 0;; *" -c "*) echo "$*" >> "{log}";; esac\nexec c++ "$@"\n')
        cc.chmod(cc.stat().st_mode | stat.S_IEXEC)

    install("22.1")
    for answer in (1, 2, 3):
        assert _compile(cc, _source(tmp_path / f"unit{answer}", answer=answer)).returncode == 0
    assert _compiles(log) == 3 and _compiles(asked) == 1
    install("22.10")  # another compiler at the same path: another size
    assert _compile(cc, _source(tmp_path / "unit1", answer=1)).returncode == 0
    assert _compiles(asked) == 2 and _compiles(log) == 4  # another key: compiled again
    # with the cache off (`mpsgen build --no-cache`) nothing is kept: the build's own key of its
    # kernel units (codegen/build.py) asks the compiler each time, and writes no file
    from mpsgen.codegen import objcache
    memos = sorted((tmp_path / "cache" / "objects" / "compilers").iterdir())
    assert objcache.compiler_identity([str(cc)]) == b"clang 22.10\n" and _compiles(asked) == 2
    monkeypatch.setenv("MPSGEN_OBJECT_CACHE", "0")
    assert objcache.compiler_identity([str(cc)]) == b"clang 22.10\n" and _compiles(asked) == 3
    assert sorted((tmp_path / "cache" / "objects" / "compilers").iterdir()) == memos


def test_a_unit_past_its_budget_is_compiled_again_at_the_lower_inline_threshold(tmp_path, toolchain):
    """A compile at a raised inline threshold that takes more than MPSGEN_UNIT_BUDGET seconds of
    CPU time is stopped (the compiler's whole session) and run again at
    objcache.FALLBACK_INLINE_THRESHOLD. The object is cached under the flags it was compiled with,
    with a record that the unit went past its budget: the next build of the unit compiles it at
    the fallback threshold straight away (here: a hit), and a compile that only waits (a loaded
    machine: wall time, little CPU) is not stopped (issue 50: the budget measured wall time)."""
    log = tmp_path / "thresholds.log"
    cc = tmp_path / "slowcc"
    cc.write_text(f"#!{sys.executable}\nimport os, sys, time\nargs = sys.argv[1:]\n"
                  "t = next((a.split('=')[1] for a in args if a.startswith('-inline-threshold=')), '')\n"
                  "if '-E' not in args:  # a compile, not the cache's preprocessing\n"
                  f"    open({str(log)!r}, 'a').write(t + '\\n')\n"
                  "    if t == '1000' and os.environ.get('SLOWCC') == 'waits':\n        time.sleep(4)\n"
                  "    elif t == '1000':  # the optimiser's blow-up: CPU time until stopped\n"
                  "        while True:\n            pass\n"
                  "os.execvp('c++', ['c++'] + [a for a in args if a != '-mllvm' and not a.startswith('-inline')])\n")
    cc.chmod(cc.stat().st_mode | stat.S_IEXEC)
    flags, budget = ("-O2", "-mllvm", "-inline-threshold=1000"), {"MPSGEN_UNIT_BUDGET": "2"}
    started = time.monotonic()
    r = _compile(cc, _source(tmp_path / "a"), flags, env=budget)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - started < 30  # the spinning compile was stopped, not waited for
    assert "took over 2 s of CPU time to compile; compiled again at clang's inline threshold 500" in r.stderr
    assert log.read_text().split() == ["1000", "500"]
    assert (tmp_path / "a" / "unit.o").stat().st_size > 0
    # the same unit again, in another folder (a clean build): straight to 500, whose object is cached
    r = _compile(cc, _source(tmp_path / "b"), flags, env=budget)
    assert r.returncode == 0 and "took over" not in r.stderr
    assert log.read_text().split() == ["1000", "500"]
    # asked at 500 itself: the same object, a hit
    assert _compile(cc, _source(tmp_path / "c"), ("-O2", "-mllvm", "-inline-threshold=500"), env=budget).returncode == 0
    assert log.read_text().split() == ["1000", "500"]
    # at the fallback threshold or below, no budget applies
    assert _compile(cc, _source(tmp_path / "d", answer=7), ("-O2", "-mllvm", "-inline-threshold=500"),
                    env={"MPSGEN_UNIT_BUDGET": "0"}).returncode == 0
    assert log.read_text().split() == ["1000", "500", "500"]
    # 4 s of waiting, past a 2 s budget in wall time, but not in CPU time: kept at 1000
    r = _compile(cc, _source(tmp_path / "e", answer=9), flags, env={**budget, "SLOWCC": "waits"})
    assert r.returncode == 0 and "took over" not in r.stderr, r.stderr
    assert log.read_text().split() == ["1000", "500", "500", "1000"]


@pytest.mark.parametrize("flags, compiles", [(("-O2",), 1), (("-O2", "-fsanitize=signed-integer-overflow"), 2),
                                             (("-O2", "-g"), 2), (("-O2", "-g0", "-g"), 2),
                                             # Python's CFLAGS, then the build's -g0: no debug information
                                             (("-g", "-O2", "-g0"), 1),
                                             # the checked variant's hooks take addresses, not lines
                                             (("-O2", "-fsanitize=thread"), 1)])
def test_a_unit_whose_objects_name_lines_is_keyed_with_its_line_markers(tmp_path, toolchain, flags, compiles):
    """Without debug information or a sanitizer an object names no line: the same code moved down
    (an ops.yaml edit above a functor) is a hit. With them it names its file:line (a UBSan report
    names the ops.yaml line), and the moved code is another entry, or the report would name the old line."""
    cc, log = toolchain
    folder = tmp_path / "clone"
    folder.mkdir()
    unit = folder / "lerp_kernels.cpp"
    for line in (10, 12):
        unit.write_text(f'# {line} "{folder}/ops.yaml"\nint lerp(int a, int b) {{ return a + b; }}\n')
        assert _compile(cc, unit, flags=flags).returncode == 0
    assert _compiles(log) == compiles
