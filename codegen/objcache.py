"""A content-keyed cache of compiled objects, shared by every build on the machine: a clean
build, a second clone, a scratch copy (the tests' small registries, tools/sanitize.sh) and
every project made with `mpsgen init` compile a unit once.

ninja runs each compile step through it (codegen/ninja_build.py, `compile_through_cache`):

    python .../objcache.py <compiler> <flags> -c <unit> -o <object> -MMD -MF <depfile>

The key is the SHA-256 of the compiler's identity (its `--version`, asked once per compiler
binary), its arguments (the unit's, object's and depfile's own paths left out) and the
preprocessed source with its line markers left out. A kernel unit is preprocessed already
(the build writes it so); any other unit is preprocessed with the same command and `-E`.
Line markers only name files for diagnostics and debug information, which the build has none
of (-g0), and every `__FILE__` is a string in the preprocessed text: so the same code at
another path, in another clone, has the same key, and a different one never does. A build
whose objects record file:line (a sanitizer's reports, -g) keys them with the markers.

On a hit the object is copied out of the cache and the depfile written from the markers (the
files the unit includes), as the compiler would have. Each entry carries the SHA-256 and
size of its object: a corrupt or partial entry is deleted and compiled again, never linked.
Entries are written to a temporary file and renamed into place, so concurrent builds that
compile the same unit each write a whole entry and readers never see half of one.

Where: $MPSGEN_OBJECT_CACHE_DIR, else $XDG_CACHE_HOME/mpsgen/objects, else
~/.cache/mpsgen/objects. Bounded by $MPSGEN_OBJECT_CACHE_SIZE (megabytes, default 2048): after
each store the least recently used entries go. MPSGEN_OBJECT_CACHE=0 (`mpsgen build
--no-cache`) compiles everything. Failing to read or write the cache never fails a build.
A compile at a raised clang inline threshold (the kernel units) that takes more than
$MPSGEN_UNIT_BUDGET seconds (45) of CPU time is stopped and run again at 500
(compile_within_budget); the cache then keeps the object under the flags it was compiled with,
and that this unit went past its budget, so later builds compile it at 500 straight away.
This file is run as a script and uses the standard library only (no torch: one start per unit).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAGIC = b"mpsgen-object-1"
_COMMENT_LINE = re.compile(rb"^[ \t]*//[^\n]*\n", re.M)
_MARKER = re.compile(rb"^#(?:line)? \d+ \"([^\"\n]*)\"[^\n]*$", re.M)


def cache_dir() -> Path:
    """Its own variable, apart from MPSGEN_CACHE_DIR (the generator's stamps, which the test
    suite points at a temporary folder): the suite's builds share the machine's objects."""
    if os.environ.get("MPSGEN_OBJECT_CACHE_DIR"):
        return Path(os.environ["MPSGEN_OBJECT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mpsgen" / "objects"


def enabled() -> bool:
    return os.environ.get("MPSGEN_OBJECT_CACHE", "1") != "0"


def size_bound() -> int:
    try:
        return int(float(os.environ.get("MPSGEN_OBJECT_CACHE_SIZE", "2048")) * 1024 * 1024)
    except ValueError:
        return 2048 * 1024 * 1024


class Command:
    """A compile command's parts: the unit (the argument after the last `-c`: torch's build.ninja
    writes `$cflags -c $in`, its cflags ending in `-c` too), the object (`-o`), the depfile
    (`-MF`) and the rest: the compiler and its flags, without this unit's own paths."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.source = self.output = self.depfile = None
        rest, i = [], 0
        last_c = max((j for j, a in enumerate(argv) if a == "-c"), default=None)
        while i < len(argv):
            a = argv[i]
            if a in ("-o", "-MF") and i + 1 < len(argv):
                setattr(self, "output" if a == "-o" else "depfile", argv[i + 1])
                i += 2
                continue
            if last_c is not None and i == last_c + 1:
                self.source = a
            elif a not in ("-c", "-MMD", "-MD"):
                rest.append(a)
            i += 1
        self.rest = rest

    @property
    def preprocessed(self) -> bool:
        """A kernel unit: written preprocessed by the build, under comment lines."""
        return Path(self.source).name.endswith("_kernels.cpp")

    def preprocess(self) -> bytes:
        """The unit preprocessed, as this command would see it."""
        src = Path(self.source)
        if self.preprocessed:
            return _COMMENT_LINE.sub(b"", src.read_bytes())  # (the build's key names torch's folder)
        r = subprocess.run([*self.rest, "-E", self.source], capture_output=True)
        if r.returncode != 0:
            raise OSError(r.stderr.decode(errors="replace"))
        return r.stdout


def compiler_identity(rest: list[str]) -> bytes:
    """The compiler's --version: a new compiler at the same path is another key. Asked once per
    compiler binary (its real path, size and modification time) and kept in the cache folder
    while the cache is on: `zig clang --version` takes 0.1 s, paid by every unit of a build
    otherwise (and by the build's own key of its kernel units, codegen/build.py)."""
    compiler = rest[:2] if len(rest) > 1 and rest[1] == "clang" else rest[:1]  # `c++`, or `zig clang`
    memo = None
    if enabled():
        try:
            exe = os.path.realpath(shutil.which(compiler[0]) or compiler[0])
            st = os.stat(exe)
            stamp = "\0".join([exe, str(st.st_size), str(st.st_mtime_ns), *compiler[1:]])
            memo = cache_dir() / "compilers" / hashlib.sha256(stamp.encode()).hexdigest()
            return memo.read_bytes()
        except OSError:
            pass
    r = subprocess.run([*compiler, "--version"], capture_output=True)
    # clang names the folder it runs from (`InstalledDir:`): the same clang in another venv is the same
    identity = re.sub(rb"(?m)^InstalledDir:[^\n]*\n?", b"", r.stdout + r.stderr)
    if memo is not None and r.returncode == 0:
        try:
            _write_atomically(memo, identity)
        except OSError:
            pass  # asked again next time
    return identity


def _write_atomically(path: Path, data: bytes) -> None:
    """Written to a temporary file and renamed into place: concurrent writers each write a whole
    file, and readers never see half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


_PREPROCESSOR_ONLY = ("-I", "-D", "-U", "-isystem", "-iquote", "-idirafter", "-resource-dir", "-ffile-prefix-map=",
                      "-fmacro-prefix-map=", "-fdebug-prefix-map=")


def _code_flags(rest: list[str]) -> list[str]:
    """The flags that shape the object: include paths, macros and path prefix maps shaped the
    preprocessed text (`__FILE__`), which the key holds, so they are left out (another clone's
    paths give the same key; -g0, so no debug information names a path)."""
    kept, skip = [], False
    for a in rest[1:]:
        if skip:
            skip = False
        elif a in _PREPROCESSOR_ONLY:
            skip = True
        elif not a.startswith(_PREPROCESSOR_ONLY):
            kept.append(a)
    return kept


def _records_locations(flags: list[str]) -> bool:
    """Whether the object records the source's file:line: a sanitizer's reports name them (UBSan,
    ASan; not ThreadSanitizer's hooks, which the checked variant's own runtime implements and
    which are passed addresses only), as does debug information: the last -g flag, unless it is
    -g0 (Python's CFLAGS, which torch's extensions inherit, say -g; the build's -g0 after them
    turns it off, and keyed with the markers every unit in another folder missed the cache).
    Such an object is keyed with its line markers, so the same code moved to other lines (an
    ops.yaml edit above it) compiles again."""
    debug = [f for f in flags if f.startswith("-g")]
    return bool(debug) and debug[-1] != "-g0" or any(
        f.startswith("-fsanitize") and f != "-fsanitize=thread" for f in flags)


def key(command: Command, text: bytes) -> str:
    h = hashlib.sha256()
    flags = _code_flags(command.rest)
    h.update(MAGIC + b"\n" + compiler_identity(command.rest))
    h.update("\0".join(flags).encode() + b"\n")
    h.update(text if _records_locations(flags) else _MARKER.sub(b"#", text))
    return h.hexdigest()


def _entry(k: str) -> Path:
    return cache_dir() / k[:2] / f"{k}.o"


def read(k: str) -> bytes | None:
    """The cached object, or None: missing, or corrupt (then removed)."""
    path = _entry(k)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header, _, payload = data.partition(b"\n")
    parts = header.split(b" ")
    if (len(parts) != 3 or parts[0] != MAGIC or parts[2] != str(len(payload)).encode()
            or hashlib.sha256(payload).hexdigest().encode() != parts[1]):
        print(f"mpsgen: a corrupt entry of the object cache, compiled again: {path}", file=sys.stderr)
        path.unlink(missing_ok=True)
        return None
    try:
        os.utime(path)  # recently used
    except OSError:
        pass
    return payload


def write(k: str, payload: bytes) -> None:
    path = _entry(k)
    try:
        header = b" ".join([MAGIC, hashlib.sha256(payload).hexdigest().encode(), str(len(payload)).encode()])
        _write_atomically(path, header + b"\n" + payload)
        trim(size_bound())
    except OSError as e:
        print(f"mpsgen: cannot write the object cache ({e}); the build goes on", file=sys.stderr)


def trim(bound: int) -> None:
    """Remove the least recently used entries until the cache holds at most `bound` bytes."""
    entries = []
    for p in cache_dir().glob("*/*.o"):
        try:
            st = p.stat()
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, p))
    total = sum(size for _, size, _ in entries)
    for _, size, p in sorted(entries):
        if total <= bound:
            break
        p.unlink(missing_ok=True)
        total -= size


# A line marker of the preprocessor's output that enters an #included file (flag 1), and whether
# that is a system header (flag 3)
_ENTER = re.compile(rb"^# \d+ \"([^\"\n]*)\"((?: \d)*)[ \t]*$", re.M)


def _depfile(command: Command, text: bytes) -> None:
    """What -MMD would have written: the object, then the unit and the files it #includes but
    system headers (the same list as clang's, for the CPU stubs' unit of the shipped registry).
    Not every file a line marker names: a `#line` directive names the generated file that
    code came from, which it does not include. Nor, for a kernel unit (preprocessed already,
    so it includes nothing), its .metal: as a dependency, an edit that moved ops to other
    lines had ninja compile all of theirs again (from the cache), though the build had left
    their units as they were (build.py `_keys`)."""
    if not command.depfile:
        return
    entered = [] if command.preprocessed else [f for f, flags in _ENTER.findall(text)
                                                if b"1" in flags.split() and b"3" not in flags.split()]
    deps = dict.fromkeys(f.decode(errors="replace") for f in entered)
    deps = [d for d in deps if not d.startswith("<") and os.path.isfile(d)]
    escape = lambda p: p.replace(" ", "\\ ")  # noqa: E731
    Path(command.depfile).write_text(f"{escape(command.output)}: " + " \\\n  ".join(
        escape(p) for p in [command.source, *deps]) + "\n")


_INLINE_THRESHOLD = re.compile(r"-inline-threshold=(\d+)")
FALLBACK_INLINE_THRESHOLD = 500


def unit_budget() -> float:
    """MPSGEN_UNIT_BUDGET: seconds a unit compiled at a raised inline threshold may take (45)."""
    try:
        return float(os.environ.get("MPSGEN_UNIT_BUDGET", "45"))
    except ValueError:
        return 45.0


def fallback_command(argv: list[str]) -> list[str] | None:
    """`argv` at FALLBACK_INLINE_THRESHOLD, if it raises clang's inline threshold above it (the
    kernel units: codegen/build.py CLANG_KERNEL_FLAGS); else None."""
    raised = [i for i, a in enumerate(argv) if (m := _INLINE_THRESHOLD.fullmatch(a))
              and int(m[1]) > FALLBACK_INLINE_THRESHOLD]
    return [f"-inline-threshold={FALLBACK_INLINE_THRESHOLD}" if i in raised else a
            for i, a in enumerate(argv)] if raised else None


def _session_cpu_seconds(session: int) -> float | None:
    """The CPU time (user and system) of the processes of `session` and of their children that
    have ended, from /proc (Linux); None without /proc."""
    try:
        pids = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return None
    ticks = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()  # after the command's name: state, ppid, ...
        if int(fields[3]) == session:  # utime, stime, cutime, cstime
            ticks += sum(int(x) for x in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def compile_within_budget(argv: list[str]) -> tuple[int, list[str]]:
    """Run the compile `argv`; returns its exit code and the command that made the object. One
    with a fallback_command that takes more than unit_budget() seconds of CPU time is stopped
    and the fallback run instead. Some functors blow up clang's optimiser at the raised
    threshold (one shaped like torch's mish_backward: 270 s at 1000, 2 s at 500); the other
    threshold inlines less, so that op's kernels may be slower, with the same results. CPU
    time, not wall time: a loaded machine does not change which code a unit gets (without
    /proc, on macOS, the wall time stands in for it)."""
    fallback = fallback_command(argv)
    if fallback is None:
        return subprocess.run(argv).returncode, argv
    proc = subprocess.Popen(argv, start_new_session=True)  # its own session: the driver's children too
    started, budget = time.monotonic(), unit_budget()
    while True:
        try:
            return proc.wait(timeout=0.25), argv
        except subprocess.TimeoutExpired:
            pass
        used = _session_cpu_seconds(proc.pid)
        if (time.monotonic() - started if used is None else used) > budget:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    unit = Command(argv).source
    print(f"mpsgen: {unit} took over {budget:.0f} s of CPU time to compile; compiled again at clang's inline "
          f"threshold {FALLBACK_INLINE_THRESHOLD} (its kernels may be slower; same results)", file=sys.stderr)
    return subprocess.run(fallback).returncode, fallback


def _over_budget(k: str) -> str:
    """The key of the record that the compile keyed `k` went past its budget."""
    return hashlib.sha256(f"over budget {k}".encode()).hexdigest()


def main(argv: list[str]) -> int:
    command = Command(argv)
    if not enabled() or not command.source or not command.output:
        return compile_within_budget(argv)[0]
    try:
        text = command.preprocess()
        k = key(command, text)
    except OSError:
        return subprocess.run(argv).returncode  # the compiler says what is wrong
    fallback = fallback_command(argv)
    if fallback is not None and read(_over_budget(k)) is not None:
        # past its budget before: at the fallback threshold, keyed by it
        argv, k = fallback, key(Command(fallback), text)
    cached = read(k)
    if cached is not None:
        Path(command.output).write_bytes(cached)
        _depfile(command, text)
        return 0
    code, used = compile_within_budget(argv)
    if code == 0:
        if used is not argv:  # past its budget now: the object is the fallback's
            write(_over_budget(k), b"")
            k = key(Command(used), text)
        write(k, Path(command.output).read_bytes())
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
