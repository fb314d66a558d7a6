"""Fuzz the generator with mutants of the shipped ops.yaml (issue 10).

Each mutant goes through `python -m codegen generate` (its `main()`, in-process) into
a copy of the shipped generated/, and must end in one of two ways:

- rejected: exit 1, every message `ops.yaml:LINE: ...` with LINE > 0 that names a key
  (or is about the file as a whole: its bytes or its YAML), and the output folder
  byte-identical, hidden files included (no temporaries left);
- accepted: exit 0, and the library.py it wrote compiles.

Any exception escaping main() (a raw traceback for the user) fails the test. Nothing
may appear beside ops.yaml and the output folder (the stamp's cache folder excepted).
The run is seeded and bounded (80 mutants; `FUZZ_SECONDS` bounds the differential one); `benchmarks/fuzz_registry.py` runs it
longer. A failing mutant is written to the test's tmp folder and its seed printed.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpsgen.codegen import __main__ as cli  # noqa: E402

SHIPPED = (ROOT / "ops.yaml").read_text()
FUZZ_SECONDS = float(os.environ.get("FUZZ_SECONDS", "35"))
FUZZ_SEED = int(os.environ.get("FUZZ_SEED", "20261122"))

LOCATED = re.compile(r"ops\.yaml:(\d+): (.*)")
NAMES_KEY = re.compile(r"(op '.*', )?key '")
FILE_LEVEL = ("not valid YAML", "not UTF-8", "control character", "expected a mapping with keys",
              "expected a single YAML document")

BAD_VALUES = [
    "null", "~", "0", "-1", "false", "true", "[]", "{}", "''", "' '", "[float]", "[[float]]",
    "{in: [float], out: float}", "{in: float, out: {x: 1}}", "{dtype: [float], reason: r}",
    "9" * 4301, "0x" + "f" * 4000, "0b" + "1" * 20000, ":".join(["59"] * 3000), "1e999", ".nan", "-.inf", "0x10", "!!binary aGk=", "2001-01-01", "!!set {a}",
    '"mpsgen\\n"', "NULL", "errno", "int", "new", "aten", "'a''b\"c'", "'\\'", '"\\u0000"',
    '"x\\ty"', "x" * 300, "grad", "*nope", "&a [*a]", "{<<: []}", "'# not a comment'",
    "[" * 200 + "]" * 200, "{func: 1}", "torch.exp\n", "'grad  # c'", "|\n  grad \\\n  * 2",
    "exp(Tensor self) -> Tensor", "'q' ",
]
BAD_KEYS = ["null", "0", "false", "~", "''", "<<", "? [a]", "func", "dtypes", "xfail", "x" * 100]
BAD_BYTES = [b"\xff", b"\x00", b"\x07", b"\x1b", b"\xc3", b"\xed\xa0\x80", b"\t", b"\r", b"\xef\xbb\xbf",
             "\u2028".encode(), b"\x85"]
BAD_NAMES = ["NULL", "errno", "EOF", "assert", "int", "class", "y" * 246, "x" * 65, "lambda",
             "exp", "hypot.Tensor", "isnan", "_x", "a__b", "foo\u00e9"]
FORMULA_TAILS = ["  # comment", " \\", " +", " + grad" * 3, " + " + " + ".join(["grad"] * 1500),
                 " if grad else grad", ", grad", " := 1"]


def alias_bomb(levels: int) -> str:
    lines = ["lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# ---- mutations ----------------------------------------------------------------------


def _value_lines(lines: list[str]) -> list[int]:
    return [i for i, l in enumerate(lines) if re.match(r"\s*(- )?[\w<]+: \S", l)]


def text_mutation(rng: random.Random, text: str) -> tuple[str, bytes | str]:
    lines = text.split("\n")
    kind = rng.choice(["delete", "duplicate", "swap", "value", "key", "byte", "deep", "bomb", "alias",
                       "indent", "truncate", "name", "formula", "tab", "entry"])
    i = rng.randrange(len(lines))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "value":
        i = rng.choice(_value_lines(lines))
        key, _, _ = lines[i].partition(": ")
        lines[i] = f"{key}: {rng.choice(BAD_VALUES)}"
    elif kind == "key":
        i = rng.choice(_value_lines(lines))
        indent = re.match(r"\s*(- )?", lines[i]).group()
        _, _, value = lines[i].partition(": ")
        lines[i] = f"{indent}{rng.choice(BAD_KEYS)}: {value}"
    elif kind == "byte":
        data = "\n".join(lines).encode()
        pos = rng.randrange(len(data))
        return kind, data[:pos] + rng.choice(BAD_BYTES) + data[pos:]
    elif kind == "deep":
        i = rng.choice(_value_lines(lines))
        key, _, _ = lines[i].partition(": ")
        depth = rng.choice([10, 70, 1000, 5000])
        lines[i] = f"{key}: " + rng.choice(["[" * depth + "]" * depth, "{a: " * depth + "1" + "}" * depth])
    elif kind == "bomb":
        bomb = alias_bomb(rng.choice([3, 6, 9, 12]))
        if rng.random() < 0.5:
            lines.append(bomb)
        else:  # under an op
            i = rng.choice(_value_lines(lines))
            indent = re.match(r"\s*", lines[i]).group()
            lines[i:i] = [indent + l for l in bomb.splitlines()]
    elif kind == "alias":
        a, b = rng.sample(_value_lines(lines), 2)
        key_a, _, value_a = lines[a].partition(": ")
        if not value_a.startswith(("&", "|", ">")):
            lines[a] = f"{key_a}: &fz {value_a}"
            key_b, _, _ = lines[b].partition(": ")
            lines[b] = f"{key_b}: *fz"
    elif kind == "indent":
        lines[i] = ("  " + lines[i]) if rng.random() < 0.5 else lines[i][2:]
    elif kind == "truncate":
        return kind, "\n".join(lines)[: rng.randrange(len(text))]
    elif kind == "name":
        funcs = [k for k, l in enumerate(lines) if "- func: " in l]
        k = rng.choice(funcs)
        lines[k] = re.sub(r"func: \w+", f"func: {rng.choice(BAD_NAMES)}", lines[k])
    elif kind == "formula":
        formulas = [k for k, l in enumerate(lines) if re.match(r"\s+(self|other|end|weight|tensor\d): ", l)]
        if formulas:
            k = rng.choice(formulas)
            tail = rng.choice(FORMULA_TAILS)
            key, _, formula = lines[k].partition(": ")
            lines[k] = f"{key}: |\n{' ' * (len(key) - len(key.lstrip()) + 2)}{formula}{tail}"
    elif kind == "tab":
        lines[i] = "\t" + lines[i]
    elif kind == "entry":
        lines.insert(rng.choice([k for k, l in enumerate(lines) if "- func: " in l]),
                     "  - " + rng.choice(BAD_VALUES))
    return kind, "\n".join(lines)


def structural_mutation(rng: random.Random, doc: dict) -> str:
    """Mutate the parsed registry (valid YAML out), then dump it."""
    ops = doc.get("ops")
    if not isinstance(ops, list) or not ops or not all(isinstance(e, dict) for e in ops):
        return yaml.safe_dump(doc, sort_keys=False, width=1000)  # an earlier mutation broke it already
    entry = rng.choice(ops)
    kind = rng.choice(["del_key", "set_key", "dup_entry", "drop_entry", "shuffle", "new_key", "nest",
                       "xfail", "dtypes", "overload"])
    bad = rng.choice([None, 0, False, True, [], {}, "", "x" * 80, ["float"], {"in": ["float"]},
                      [[["deep"]]], 1.5, -1, {"a": {"b": {"c": None}}}, "grad # c"])
    if kind == "del_key" and entry:
        del entry[rng.choice(list(entry))]
    elif kind == "set_key" and entry:
        entry[rng.choice(list(entry))] = bad
    elif kind == "dup_entry":
        ops.insert(rng.randrange(len(ops) + 1), dict(entry))
    elif kind == "drop_entry" and len(ops) > 1:
        ops.remove(entry)
    elif kind == "shuffle":
        rng.shuffle(ops)
    elif kind == "new_key":
        entry[rng.choice(["opinfo", "xfail", "derivatives", "samples", None, 0, False])] = bad
    elif kind == "nest":
        doc[rng.choice(["namespace", "ops", "extra"])] = bad
    elif kind == "xfail":
        entry["xfail"] = [{"dtype": rng.choice(["float", "half", ["float"], None, "long"]),
                           "reason": rng.choice(["r", "", None, "a'b\"c\\", "x\ny"]),
                           **({"samples": rng.choice([["reference[0]"], "s", [1], [None]])}
                              if rng.random() < 0.5 else {})}]
    elif kind == "dtypes":
        entry["dtypes"] = [rng.choice(["float", "integer", {"in": "long", "out": "float"},
                                       {"in": ["float"], "out": "float"}, {"in": "float", "out": "float",
                                                                           "opmath": rng.choice([1, "yes", True])},
                                       None, 3])]
    elif kind == "overload":
        name = re.match(r"\w+", entry.get("func", "x") if isinstance(entry.get("func"), str) else "x").group()
        ops.append({"func": rng.choice([f"{name}.Scalar(Tensor self, Scalar other) -> Tensor",
                                        f"{name}.Tensor(Tensor self, Scalar other) -> Tensor",
                                        f"{name}.Foo(Tensor self) -> Tensor"])})
    return yaml.safe_dump(doc, sort_keys=False, width=1000)


def mutant(rng: random.Random) -> tuple[str, bytes]:
    if rng.random() < 0.3:
        doc = yaml.safe_load(SHIPPED)
        kinds = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            kinds.append("struct")
            text = structural_mutation(rng, doc)
        return "+".join(kinds), text.encode()
    text, kinds = SHIPPED, []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        try:
            kind, out = text_mutation(rng, text)
        except (IndexError, ValueError):  # nothing left to mutate that way (e.g. after a truncation)
            continue
        kinds.append(kind)
        if isinstance(out, bytes):
            return "+".join(kinds), out
        text = out
    return "+".join(kinds) or "none", text.encode()


# ---- checking one mutant --------------------------------------------------------------


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


class FuzzFailure(AssertionError):
    pass


def check_mutant(data: bytes, work: Path) -> str:
    """'rejected' or 'accepted'; raises FuzzFailure (or whatever main() let escape)."""
    ops, out = work / "ops.yaml", work / "generated"
    ops.write_bytes(data)
    before = snapshot(out)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli.main(["generate", "--ops", str(ops), "--out", str(out)])
    if sorted(p.name for p in work.iterdir()) != ["cache", "generated", "ops.yaml"]:
        raise FuzzFailure(f"wrote outside the output folder: {sorted(p.name for p in work.iterdir())}")
    if code == 0:
        library = (out / "library.py").read_text()
        try:
            compile(library, "library.py", "exec")
        except SyntaxError as e:
            raise FuzzFailure(f"accepted, but library.py does not compile: {e}") from None
        hidden = [n for n in os.listdir(out) if n.startswith(".")]
        if hidden:
            raise FuzzFailure(f"left {hidden} in the output folder")
        return "accepted"
    messages = [l.strip() for l in stderr.getvalue().splitlines()[1:]]
    if code != 1 or not messages:
        raise FuzzFailure(f"exit {code} with {stderr.getvalue()!r}")
    for message in messages:
        m = LOCATED.fullmatch(message)
        if not m or int(m.group(1)) < 1:
            raise FuzzFailure(f"not located: {message!r}")
        if not NAMES_KEY.match(m.group(2)) and not any(k in m.group(2) for k in FILE_LEVEL):
            raise FuzzFailure(f"names no key: {message!r}")
    if snapshot(out) != before:
        raise FuzzFailure("a rejected registry changed the output folder")
    return "rejected"


def fuzz(seconds: float, seed: int, work: Path, max_mutants: int | None = None,
         report=print) -> dict[str, int]:
    """Check mutants until `seconds` pass; returns counts. Raises on the first failure,
    after saving the mutant as work/failing.yaml."""
    work.mkdir(parents=True, exist_ok=True)
    run_dir = work / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir()
    shutil.copytree(ROOT / "generated", run_dir / "generated")
    (run_dir / "cache").mkdir()
    old_cache = os.environ.get("MPSGEN_CACHE_DIR")
    os.environ["MPSGEN_CACHE_DIR"] = str(run_dir / "cache")
    counts = {"accepted": 0, "rejected": 0}
    kinds: dict[str, int] = {}
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    try:
        n = 0
        while time.monotonic() < deadline and (max_mutants is None or n < max_mutants):
            kind, data = mutant(rng)
            try:
                outcome = check_mutant(data, run_dir)
            except BaseException as e:
                (work / "failing.yaml").write_bytes(data)
                raise FuzzFailure(f"mutant #{n} ({kind}) of seed {seed}, saved as {work / 'failing.yaml'}: "
                                  f"{type(e).__name__}: {e}") from e
            counts[outcome] += 1
            kinds[kind.split("+")[0]] = kinds.get(kind.split("+")[0], 0) + 1
            n += 1
    finally:
        if old_cache is None:
            os.environ.pop("MPSGEN_CACHE_DIR", None)
        else:
            os.environ["MPSGEN_CACHE_DIR"] = old_cache
    report(f"{sum(counts.values())} mutants in {seconds:.0f} s (seed {seed}): {counts}; kinds {kinds}")
    return counts


def test_fuzz_registry(tmp_path):
    # a count of mutants, not a time: on a loaded machine 35 s read only 41 of them
    counts = fuzz(max(FUZZ_SECONDS, 600), FUZZ_SEED, tmp_path, max_mutants=80)
    assert counts["rejected"] > 50 and counts["accepted"] > 5, counts


def test_shipped_registry_is_accepted(tmp_path, monkeypatch):
    """The fuzz's baseline: the unmutated registry generates exactly the shipped files."""
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "run" / "cache"))
    work = tmp_path / "run"
    work.mkdir()
    shutil.copytree(ROOT / "generated", work / "generated")
    (work / "cache").mkdir()
    before = snapshot(work / "generated")
    assert check_mutant(SHIPPED.encode(), work) == "accepted"
    assert snapshot(work / "generated") == before


def test_reads_yaml_as_pyyaml_does():
    """Differential: wherever PyYAML's own safe loader reads a mutant (and it has no
    duplicate keys), codegen/registry/yaml_source.py reads the same values."""
    from mpsgen.codegen.registry import yaml_source

    # a minute at most, on a loaded machine: the count, not the clock, is what is asserted
    rng, compared, deadline = random.Random(FUZZ_SEED), 0, time.monotonic() + 60
    while time.monotonic() < deadline and compared < 100:
        _, data = mutant(rng)
        if b"lol0:" in data:  # an alias bomb: PyYAML would expand it
            continue
        try:
            text = data.decode("utf-8")
            expected = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except Exception:  # YAMLError, UnicodeDecodeError, ValueError (4,301 digits), ...
            continue
        try:
            got = yaml_source.load(yaml_source.decode(data))
        except yaml_source.SourceError as e:
            assert "given twice" in e.message or "nested more than" in e.message \
                or "unsupported YAML tag" in e.message or "control character" in e.message \
                or "contains it" in e.message or "too large" in e.message, e  # refused on purpose
            continue
        assert repr(got) == repr(expected)
        compared += 1
    print(f"{compared} mutants read alike")
    assert compared > 50
