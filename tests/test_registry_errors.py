"""Hostile registries: every problem is an `ops.yaml:LINE` error naming the key (issue 10).

Each test loads in-process (codegen.registry.loader.load) and expects RegistryError, never
another exception; expected lines are computed from the YAML text itself.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick  # bash test.sh --quick (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpsgen.codegen.registry import loader, names  # noqa: E402

BODY = ("    functor: |\n"
        "      template <typename T>\n"
        "      inline T operator()(const T x) { return x; }\n")


def op(name: str = "foo", dtypes: str = "[float]", extra: str = "", func: str | None = None) -> str:
    return (f"  - func: {func or f'{name}(Tensor self) -> Tensor'}\n"
            f"    dtypes: {dtypes}\n"
            f"    reference: torch.exp\n"
            f"{extra}{BODY}")


def one_op(func: str, keys: str, reference: str, functor: str) -> str:
    """A registry of one entry: its schema, the keys under test (YAML lines), float dtypes,
    a reference and the functor's lines."""
    return ("namespace: testns\nops:\n"
            f"  - func: {func}\n"
            f"{keys}"
            "    dtypes: [float]\n"
            f"    reference: {reference}\n"
            f"{functor}")


def registry(*ops: str, namespace: str = "testns") -> str:
    return f"namespace: {namespace}\nops:\n" + "".join(ops or (op(),))


def lineno(text: str, needle: str) -> int:
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def errors_of(tmp_path: Path, text: str | bytes) -> list[str]:
    path = tmp_path / "ops.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(loader.RegistryError) as info:
        loader.load(path)
    for message in info.value.errors:
        m = re.match(r"ops\.yaml:(\d+): ", message)
        assert m and int(m.group(1)) > 0, message
    return info.value.errors


def single(errors: list[str], line: int, key: str | None, op: str | None = None) -> str:
    assert len(errors) == 1, errors
    if op is not None and len(op) > 80:
        op = op[:77] + "..."  # labels in messages are bounded
    what = ", ".join(p for p in (f"op '{op}'" if op else "", f"key '{key}'" if key is not None else "") if p)
    prefix = f"ops.yaml:{line}: " + (f"{what}: " if what else "")
    assert errors[0].startswith(prefix), (prefix, errors[0])
    return errors[0][len(prefix):]


# ---- reading the file ----------------------------------------------------------------


def test_non_utf8_byte_is_located(tmp_path):
    text = registry(op(extra="    opinfo: caf\xe9\n"))
    data = text.encode().replace("caf\xe9".encode(), b"caf\xe9")
    message = single(errors_of(tmp_path, data), lineno(text, "opinfo"), None)
    assert "byte 0xe9" in message and "not UTF-8" in message


def test_control_character_is_located(tmp_path):
    text = registry(op(extra="    opinfo: a\x07b\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "opinfo"), None)
    assert "U+0007" in message


def test_yaml_syntax_error_is_located(tmp_path):
    text = registry(op(extra="    opinfo: [unclosed\n"))
    errors = errors_of(tmp_path, text)
    assert len(errors) == 1 and "not valid YAML" in errors[0]


def test_huge_number_names_its_key(tmp_path):
    text = registry(op(extra="    opinfo: " + "9" * 4301 + "\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "opinfo"), "opinfo")
    assert "4301 characters is too long" in message


@pytest.mark.parametrize("number", ["0x" + "f" * 4000, "0b" + "1" * 20000, ":".join(["59"] * 3000)])
def test_huge_number_in_other_spellings_names_its_key(tmp_path, number):
    text = registry(namespace=number)
    message = single(errors_of(tmp_path, text), 1, "namespace")
    assert "too large" in message


def test_deep_nesting_is_refused_at_its_line(tmp_path):
    text = registry(op(extra="    opinfo: " + "[" * 1000 + "]" * 1000 + "\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "opinfo"), "opinfo")
    assert "nested more than" in message


def test_alias_bomb_fails_fast_at_the_alias(tmp_path):
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    text = registry() + "\n".join(lines) + "\n"
    start = time.perf_counter()
    errors = errors_of(tmp_path, text)
    assert time.perf_counter() - start < 2
    message = single(errors, lineno(text, "a3: &a3"), "a3")  # 10 x 1,111 values
    assert "aliases expand to more than" in message


def test_recursive_alias_is_located(tmp_path):
    text = registry(op(extra="    opinfo: &loop [*loop]\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "opinfo"), "opinfo")
    assert "contains it" in message


def test_small_aliases_and_merge_keys_still_work(tmp_path):
    text = ("namespace: testns\nops:\n  - &first\n    " + op("foo")[4:]
            + "  - <<: *first\n    func: bar(Tensor self) -> Tensor\n")
    path = tmp_path / "ops.yaml"
    path.write_text(text)
    registry_ = loader.load(path)
    assert [o.name for o in registry_.ops] == ["foo", "bar"]
    assert registry_.ops[1].reference == "torch.exp"


def test_duplicate_key_is_an_error(tmp_path):
    text = registry(op(extra="    reference: torch.sin\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "torch.sin"), "reference")
    assert "given twice" in message and f"line {lineno(text, 'torch.exp')}" in message


def test_unsupported_tag_is_located(tmp_path):
    text = registry(op(extra="    opinfo: !!python/object:os.system x\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "opinfo"), "opinfo")
    assert "unsupported YAML tag" in message


@pytest.mark.parametrize("key", ["null", "0", "false", "~", "''"])
def test_odd_keys_are_named(tmp_path, key):
    text = registry(op(extra=f"    {key}: 1\n"))
    named = {"~": "null", "''": ""}.get(key, key)
    message = single(errors_of(tmp_path, text), lineno(text, f"    {key}: 1"), named, "foo")
    assert "unknown key" in message


def test_odd_top_level_key_is_named(tmp_path):
    text = registry() + "null: 1\n"
    message = single(errors_of(tmp_path, text), lineno(text, "null: 1"), "null")
    assert "unknown key" in message


@pytest.mark.parametrize("entry", ["  - just a string\n", "  - [a, list]\n", "  - 42\n", "  -\n"])
def test_entry_that_is_not_a_mapping_has_its_line(tmp_path, entry):
    text = registry(op(), entry)
    message = single(errors_of(tmp_path, text), len(text.splitlines()), "ops")
    assert "must be a mapping" in message


def test_document_that_is_not_a_mapping_has_a_line(tmp_path):
    errors = errors_of(tmp_path, "- a\n- b\n")
    assert errors[0].startswith("ops.yaml:1: expected a mapping")


# ---- values of the wrong type ----------------------------------------------------------


@pytest.mark.parametrize("pair", ["{in: [float], out: float}", "{in: float, out: {a: 1}}", "{in: null, out: float}"])
def test_dtype_pair_of_wrong_type_is_located(tmp_path, pair):
    text = registry(op(dtypes=f"[{pair}]"))
    message = single(errors_of(tmp_path, text), lineno(text, "dtypes"), "dtypes", "foo")
    assert "unknown dtype" in message


@pytest.mark.parametrize("dtype", ["[float]", "{a: 1}", "null", "1"])
def test_xfail_dtype_of_wrong_type_is_located(tmp_path, dtype):
    text = registry(op(extra=f"    xfail:\n      - {{dtype: {dtype}, reason: because}}\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "reason: because"), "xfail", "foo")
    assert "not registered" in message


# ---- names ---------------------------------------------------------------------------


@pytest.mark.parametrize("namespace", ['"mpsgen\\n"', "aten", "prims", "prim", "quantized", "torch", "_C",
                                       "c10", "int", "_private", "'x y'"])
def test_rejects_bad_namespace(tmp_path, namespace):
    text = registry(namespace=namespace)
    single(errors_of(tmp_path, text), 1, "namespace")


@pytest.mark.parametrize("name", ["NULL", "errno", "EOF", "assert", "int", "new", "this", "class",
                                  "kernel", "lambda", "INT_MAX", "x" * 65, "y" * 246])
def test_rejects_op_name_that_generated_code_cannot_use(tmp_path, name):
    text = registry(op(name))
    message = single(errors_of(tmp_path, text), lineno(text, "func:"), "func", name)
    assert name[:20] in message or "characters long" in message


@pytest.mark.parametrize("second", ["hypot.Tensor", "Hypot"])
def test_two_ops_with_functors_cannot_share_files(tmp_path, second):
    text = registry(op(func="hypot(Tensor self) -> Tensor"), op(func=f"{second}(Tensor self) -> Tensor"))
    message = single(errors_of(tmp_path, text), lineno(text, f"func: {second}("), "func", second)
    assert f"the op at ops.yaml:{lineno(text, 'func: hypot(')} (hypot)" in message
    assert f"{second.split('.')[0]}.metal" in message


@pytest.mark.parametrize("overload", ["bar-baz", "1x"])
def test_rejects_overload_name_torch_cannot_parse(tmp_path, overload):
    # torch's schema parser reads an identifier after the '.' ("expected eof but found '-'")
    text = registry(op(func=f"exp.{overload}(Tensor self) -> Tensor"))
    message = single(errors_of(tmp_path, text), lineno(text, "func:"), "func", "exp")
    assert f"overload name {overload!r} must be an identifier" in message


def test_str_choice_that_is_no_identifier_is_one_error_not_a_traceback(tmp_path):
    # its only choice refused, the op has no kernel to name its functor after
    text = registry(op(func="foo(Tensor self, *, str mode) -> Tensor", extra="    args:\n      mode: {choices: {a-b: foo}}\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "choices:"), "args", "foo")
    assert "choice 'a-b' is not an identifier" in message


def test_scalar_overload_of_an_op_with_errors_is_not_called_orphaned(tmp_path):
    text = registry(op(func="foo.Tensor(Tensor self, Tensor other) -> Tensor", dtypes="[nosuch]"),
                    "  - func: foo.Scalar(Tensor self, Scalar other) -> Tensor\n")
    message = single(errors_of(tmp_path, text), lineno(text, "dtypes:"), "dtypes", "foo.Tensor")
    assert "unknown dtype group 'nosuch'" in message


def test_op_name_of_64_characters_is_fine(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(registry(op("z" * 64)))
    assert loader.load(path).ops[0].name == "z" * 64


@pytest.mark.parametrize("name,refused", [("self", False), ("alpha", False), ("new", True), ("NULL", True),
                                          ("int", True), ("x\n", True), ("__x", True), ("errno", True)])
def test_check_cpp_name(name, refused):
    reason = names.check_cpp_name(name)
    assert (reason is not None) == refused, reason
    if refused:
        assert isinstance(reason, str) and reason


def test_codegen_never_matches_with_dollar():
    """`$` accepts a trailing newline; identifiers are matched with \\Z or fullmatch."""
    for path in (ROOT / "codegen").glob("*.py"):
        for m in re.finditer(r're\.compile\(r?"([^"]*)"', path.read_text()):
            assert not m.group(1).endswith("$"), (path.name, m.group(1))


# ---- derivative formulas -------------------------------------------------------------


def _derivative(formula_yaml: str) -> str:
    return registry(op(extra=f"    derivatives:\n      self: {formula_yaml}\n"))


@pytest.mark.parametrize("formula,says", [
    ("'grad * self // d/dx'", "comment"),
    ("'grad; return grad'", "';'"),
    ("'grad * (self'", "unclosed '('"),
    ("'grad * self)'", "unmatched ')'"),
    ("\"grad * \\\"self\"", "unterminated string"),
    ("|\n        #define X\n        grad", "'#'"),
    (" + ".join(["grad"] * 1500), "characters long"),
])
def test_rejects_formula_that_would_break_out_of_its_expression(tmp_path, formula, says):
    text = _derivative(formula)
    message = single(errors_of(tmp_path, text), lineno(text, "self: "), "derivatives", "foo")
    assert says in message


def test_formula_over_several_yaml_lines_is_kept_whole(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(_derivative(">-\n        grad *\n        self.cos()"))
    (d,) = loader.load(path).ops[0].derivatives
    assert d.formula == "grad * self.cos()"


# ---- the command line ----------------------------------------------------------------


def test_cli_prints_located_errors_without_traceback(tmp_path):
    text = registry(op(dtypes="[{in: [float], out: float}]"), op("NULL"))
    (tmp_path / "ops.yaml").write_bytes(text.encode() + b"# \xff\n")
    r = subprocess.run([sys.executable, "-m", "codegen", "generate", "--ops", str(tmp_path / "ops.yaml"),
                        "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert re.search(r"ops\.yaml:\d+: byte 0xff", r.stderr), r.stderr
    assert not (tmp_path / "out").exists()


def test_endless_input_is_refused_not_read_forever():
    r = subprocess.run([sys.executable, "-m", "codegen", "check", "--ops", "/dev/zero", "--out", "/nonexistent"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "larger than 64 MiB" in r.stderr and "Traceback" not in r.stderr


# ---- out_dtype ---------------------------------------------------------------------


@pytest.mark.parametrize("value,says", [
    ("strict", "expected 'exact'"),
    ("{exact: []}", "expected 'exact'"),
    ("{exact: [floaty]}", "unknown dtype 'floaty' in 'exact'"),
    ("{cast: [float]}", "expected 'exact'"),
    ("{complex: output}", "{complex: input}"),
    ("{exact: [float], complex: true}", "{complex: input}"),
])
def test_bad_out_dtype_is_located(tmp_path, value, says):
    text = registry(op(extra=f"    out_dtype: {value}\n"))
    assert says in single(errors_of(tmp_path, text), lineno(text, "out_dtype:"), "out_dtype", "foo")


def test_out_dtype_names_the_input_dtypes_it_is_exact_for(tmp_path):
    text = registry(op(dtypes="[float, complex2real]", extra="    out_dtype: {exact: [float]}\n"),
                    op(func="bar(Tensor self) -> Tensor", dtypes="[float]", extra="    out_dtype: exact\n"),
                    op(func="baz.Tensor(Tensor self, Tensor other) -> Tensor", dtypes="[float]"),
                    "  - func: baz.Scalar(Tensor self, Scalar other) -> Tensor\n    out_dtype: exact\n")
    path = tmp_path / "ops.yaml"
    path.write_text(text)
    foo, bar, baz = loader.load(path).ops
    assert foo.exact_out == ("float", "half", "bfloat")  # not the complex inputs
    assert bar.exact_out == ("float", "half", "bfloat")
    assert baz.exact_out == () and baz.overloads[0].exact_out == ("float", "half", "bfloat")


def test_out_dtype_complex_input_keeps_a_complex_inputs_dtype_in_a_complex_out(tmp_path):
    text = registry(op(dtypes="[float, complex2real]", extra="    out_dtype: {exact: [float], complex: input}\n"),
                    op(func="bar(Tensor self) -> Tensor", dtypes="[complex2real]", extra="    out_dtype: {complex: input}\n"),
                    op(func="baz(Tensor self) -> Tensor", dtypes="[complex2real]"))
    path = tmp_path / "ops.yaml"
    path.write_text(text)
    foo, bar, baz = loader.load(path).ops
    assert (foo.exact_out, foo.complex_out_input) == (("float", "half", "bfloat"), True)
    assert (bar.exact_out, bar.complex_out_input) == ((), True)
    assert (baz.exact_out, baz.complex_out_input) == ((), False)


@pytest.mark.parametrize("func,value", [
    ("foo(Tensor self, Tensor other) -> Tensor", "self"),  # the first Tensor
    ("foo(Tensor self, Tensor other) -> Tensor", "divisor"),
    ("foo(Tensor self, Tensor? other) -> Tensor", "other"),  # Tensor? arguments
    ("foo(Tensor self, Tensor other) -> Tensor", "[other]"),
])
def test_bad_zero_divisor_is_located(tmp_path, func, value):
    extra = "    zero_divisor: " + value + "\n" + ("    given: {other: foo, '': foo}\n" if "?" in func else "")
    text = registry(op(func=func, extra=extra).replace("const T x) { return x; }", "const T x, const T y) { return x; }"))
    errors = errors_of(tmp_path, text)
    message = next(e for e in errors if "zero_divisor" in e)
    assert message.startswith(f"ops.yaml:{lineno(text, 'zero_divisor:')}: op 'foo', key 'zero_divisor': expected the name")


@pytest.mark.parametrize("value,says", [
    ("[posinf]", "expected a mapping of optional float arguments (posinf)"),
    ("{posinf: largest}", "'posinf': 'largest'; expected"),
    ("{self: max}", "'self': 'max'; expected"),
])
def test_bad_dtype_defaults_is_located(tmp_path, value, says):
    text = registry(op(func="foo(Tensor self, float? posinf=None) -> Tensor", extra=f"    dtype_defaults: {value}\n"))
    assert says in single(errors_of(tmp_path, text), lineno(text, "dtype_defaults:"), "dtype_defaults", "foo")


@pytest.mark.parametrize("value", ["other", "[self]", "out"])
def test_bad_result_dtype_is_located(tmp_path, value):
    text = registry(op(extra=f"    result_dtype: {value}\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "result_dtype:"), "result_dtype", "foo")
    assert message.startswith("expected the name of a Tensor argument whose dtype the result has (self)")


# ---- kernels chosen by an argument's value ---------------------------------------------


@pytest.mark.parametrize("func,choices,says", [
    ("foo(Tensor self, int n) -> Tensor", "{0: a, else: b, 1: c}", "'else' must be the last choice"),
    ("foo(Tensor self, int n) -> Tensor", "{'~ 2': a}", "is not a value, a condition such as '>= 2'"),
    ("foo(Tensor self, int n) -> Tensor", "{true: a}", "is not a value, a condition"),
    ("foo(Tensor self, int n) -> Tensor", "{0: 'a b'}", "must name a kernel"),
    ("foo(Tensor self, int? n=None) -> Tensor", "{0: a}", "choices by value are for an int or Scalar argument"),
    ("foo(Tensor self, float n) -> Tensor", "{0: a}", "choices by value are for an int or Scalar argument"),
])
def test_bad_value_choices_are_located(tmp_path, func, choices, says):
    text = registry(op(func=func, extra=f"    args:\n      n: {{choices: {choices}}}\n"))
    errors = errors_of(tmp_path, text)
    assert any(e.startswith(f"ops.yaml:{lineno(text, 'n: {choices')}: op 'foo', key 'args'") and says in e
               for e in errors), errors


def test_value_choices_name_kernels_whose_functors_must_exist(tmp_path):
    text = registry(op(func="foo(Tensor self, int n) -> Tensor",
                       extra="    args:\n      n: {choices: {0: foo_zero, '>= 1': foo}}\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "functor:"), "functor", "foo")
    assert "struct foo_zero_functor" in message and "struct foo_functor" in message


# A choice's kernel gets the params it reads (`params:`), or runs another entry's (`op:`) (issue 50)
TWO_FUNCTORS = ("    functor: |\n"
                "      struct foo_one_functor { template <typename T> T operator()(const T x) { return x; } };\n"
                "      struct foo_functor { template <typename T> T operator()(const T x, const T a) { return a * x; } };\n")


def _choice_op(choices: str, func: str = "foo(Tensor self, Scalar alpha=1) -> Tensor", dtypes: str = "[float]") -> str:
    return (f"  - func: {func}\n    dtypes: {dtypes}\n    reference: torch.mul\n"
            f"    args:\n      alpha: {{choices: {choices}}}\n" + TWO_FUNCTORS)


def test_a_choice_reading_no_params_is_registered_without_them(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(registry(_choice_op("{1: {kernel: foo_one, params: []}, else: foo}")))
    (foo,) = loader.load(path).ops
    assert foo.transport == "alpha" and foo.kernel_transport("foo") == "alpha"
    assert foo.kernel_transport("foo_one") == "none" and foo.kernel_params("foo_one") == ()
    assert [(ks, t) for ks, t, _ in foo.call_groups] == [(("foo_one",), "none"), (("foo",), "alpha")]


def test_an_unread_argument_is_no_param(tmp_path):
    """`args: {non_blocking: unread}`: in the schema, not passed to the kernels (issue 50)."""
    path = tmp_path / "ops.yaml"
    path.write_text(registry(op(func="foo(Tensor self, *, bool non_blocking=False, float k=1.0) -> Tensor",
                                extra="    args: {non_blocking: unread}\n")))
    (foo,) = loader.load(path).ops
    assert [p.name for p in foo.params] == ["k"] and foo.transport == "params"
    text = registry(op(func="foo(Tensor self, bool b) -> Tensor", extra="    args: {b: unred}\n"))
    message = single(errors_of(tmp_path, text), lineno(text, "args:"), "args", "foo")
    assert "unknown Metal type 'unred'" in message and "or unread for an argument the kernels do not read" in message


@pytest.mark.parametrize("choices,func,says", [
    ("{1: {kernel: foo_one, params: [beta]}, else: foo}", None,
     "kernel 'foo_one': params ['beta'] are not arguments the kernels read; expected some of ['alpha']"),
    ("{1: {kernel: foo_one, params: alpha}, else: foo}", None, "'params' lists the non-Tensor arguments"),
    ("{1: {kernel: foo_one, param: []}, else: foo}", None, "is a kernel name, {kernel: <name>, params:"),
    ("{1: {kernel: foo_one, dtypes: [float]}, else: foo}", None, "is a kernel name, {kernel: <name>, params:"),
    ("{1: {kernel: foo_one, params: [n]}, else: foo}", "foo(Tensor self, Scalar alpha=1, int n=0) -> Tensor",
     "kernel 'foo_one' reads ['n']: a kernel reads none of the params, one Scalar (its alpha), or all of them"),
])
def test_a_choices_params_are_params_of_the_op_it_can_take(tmp_path, choices, func, says):
    text = registry(_choice_op(choices, **({"func": func} if func else {})))
    errors = errors_of(tmp_path, text)
    assert any(e.startswith("ops.yaml:") and "key 'args'" in e and says in e for e in errors), errors


def test_a_choice_runs_another_entrys_kernel_registered_once(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(registry(op(name="bar", dtypes="[float, int2float]"),
                             _choice_op("{1: {op: bar}, else: foo}", dtypes="[float, {in: int, out: float}]")
                             .replace("foo_one_functor", "unused_functor")))
    bar, foo = loader.load(path).ops
    assert foo.kernels == ["bar", "foo"] and foo.own_kernels == ["foo"] and foo.shared_kernels == {"bar": "bar"}
    assert foo.library("bar") == "bar" and foo.kernel_transport("bar") == "none"


@pytest.mark.parametrize("bar,says", [
    (None, "{op: bar}: 'bar' names no op of this file"),
    (op(name="bar", dtypes="[float]"), "'bar' does not register int -> float,"),
    (op(name="bar", func="bar(Tensor self, float k) -> Tensor"), "'bar' reads params (k); a shared kernel reads none"),
    (op(name="bar", func="bar(Tensor self, Tensor other) -> Tensor"), "'bar' is binary, this op unary"),
])
def test_another_entrys_kernel_must_serve_the_choice(tmp_path, bar, says):
    text = registry(*([bar] if bar else []), _choice_op("{1: {op: bar}, else: foo}", dtypes="[float, {in: int, out: float}]")
                    .replace("foo_one_functor", "unused_functor"))
    message = single(errors_of(tmp_path, text), lineno(text, "alpha: {choices"), "args", "foo")
    assert says in message and "expected an entry with one kernel and no params" in message, message


# ---- ScalarType arguments and aten's *_like options (issue 33) ---------------------------


@pytest.mark.parametrize("func,extra,key,says", [
    # a ScalarType is the result's dtype, which the entry says
    ("foo(Tensor self, *, ScalarType? dtype=None) -> Tensor", "", "result_dtype",
     "the ScalarType argument 'dtype' is the result's dtype: add 'result_dtype: dtype'"),
    ("foo(Tensor self, *, ScalarType? dtype=None) -> Tensor", "    result_dtype: self\n", "result_dtype",
     "expected 'dtype', the ScalarType argument whose value is the result's dtype, got 'self'"),
    ("foo(Tensor self, ScalarType a, ScalarType b) -> Tensor", "", "func",
     "at most one 'ScalarType' argument may set the result dtype"),
    ("foo(Tensor self, *, ScalarType dtype=float) -> Tensor", "", "func",
     "argument 'dtype': a ScalarType's default is None or none"),
    # the options have aten's names and None defaults
    ("foo(Tensor self, *, Device? where=None) -> Tensor", "", "func",
     "argument 'where': a Device? argument is the result's 'device', as aten's *_like functions take it"),
    ("foo(Tensor self, *, bool? flag=None) -> Tensor", "", "func",
     "argument 'flag': a bool? argument is the result's 'pin_memory'"),
    ("foo(Tensor self, *, MemoryFormat? memory_format=contiguous_format) -> Tensor", "", "func",
     "expected 'MemoryFormat? memory_format=None'"),
    ("foo(Tensor self, *, Layout layout) -> Tensor", "", "func", "has type Layout, which an elementwise kernel"),
])
def test_bad_scalartype_and_options_are_located(tmp_path, func, extra, key, says):
    text = registry(op(func=func, extra=extra))
    line = lineno(text, "result_dtype:") if "result_dtype:" in extra else lineno(text, "- func:")
    assert says in single(errors_of(tmp_path, text), line, key, "foo")


def test_a_factorys_derivatives_are_refused(tmp_path):
    text = registry(op(func="foo(Tensor self, *, Device? device=None) -> Tensor",
                       extra="    derivatives:\n      self: grad\n"))
    assert "or a factory's (an op with layout, device or pin_memory" in \
        single(errors_of(tmp_path, text), lineno(text, "derivatives:"), "derivatives", "foo")


@pytest.mark.parametrize("dtypes", ["[float8_e4m3fn]", "[{in: float8_e5m2, out: float}]"])
def test_float8_is_refused_saying_why(tmp_path, dtypes):
    """torch 2.13's MPS backend has no float8: the registry has no such dtype, and says so."""
    text = registry(op(dtypes=dtypes))
    assert "torch 2.13's MPS backend has no float8 dtype" in \
        single(errors_of(tmp_path, text), lineno(text, "dtypes:"), "dtypes", "foo")


@pytest.mark.parametrize("dtypes", ["[unsigned]", "[{in: ushort, out: ushort}, {in: ulong, out: bool}]",
                                    "[unsigned2bool]"])
def test_unsigned_dtypes_register(tmp_path, dtypes):
    path = tmp_path / "ops.yaml"
    path.write_text(registry(op(dtypes=dtypes)))
    regs = loader.load(path).ops[0].registrations
    assert {r.input for r in regs} <= {"ushort", "uint", "ulong"} and regs


# ---- functor sources: the structs that name the functor ---------------------------------

LOCAL_STRUCT = ("    functor: |\n"
                "      template <typename T>\n"
                "      inline T operator()(const T x) {\n"
                "        struct pair { float hi, lo; };  // a local type, which Metal allows\n"
                "        pair p = {static_cast<float>(x), 1.0f};\n"
                "        return static_cast<T>(p.hi - p.lo);\n"
                "      }\n")


def test_a_struct_inside_the_operator_is_not_the_functors_struct(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(one_op("foo(Tensor self) -> Tensor", "", "torch.exp", LOCAL_STRUCT))
    functor = loader.load(path).ops[0].functor
    assert functor.startswith("struct foo_functor {\n") and "struct pair { float hi, lo; };" in functor


def test_a_top_level_struct_of_another_name_is_still_refused(tmp_path):
    text = one_op("foo(Tensor self) -> Tensor", "", "torch.exp",
                  "    functor: |\n      struct helper { float v; };\n"
                  "      struct bar_functor {\n        template <typename T>\n"
                  "        inline T operator()(const T x) { return x; }\n      };\n")
    message = single(errors_of(tmp_path, text), lineno(text, "functor:"), "functor", "foo")
    assert "defines struct helper, bar_functor; expected 'struct foo_functor'" in message
