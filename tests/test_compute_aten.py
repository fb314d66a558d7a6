"""Kernel entries that implement aten ops (`implements: aten` with `compute:`): the variants
they register, read from the installed torch's native_functions.yaml, and the errors a bad
entry gets at its line. Their op-output-match against torch's CPU kernels is tests/test_ops.py's."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpsgen.codegen.registry import sizes
from mpsgen.codegen.registry.errors import RegistryError
from mpsgen.codegen.registry.loader import load

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = (ROOT / "ops.yaml").read_text()


def shipped_entry(func_start: str) -> str:
    """The shipped entry whose func starts so, without its comments, as its own text."""
    start = SHIPPED.index(f"  - func: {func_start}")
    end = SHIPPED.find("\n\n", start)
    return SHIPPED[start:end + 1 if end >= 0 else len(SHIPPED)]


def registry_of(*entries: str, tmp_path: Path):
    (tmp_path / "ops.yaml").write_text("namespace: kops\nops:\n" + "".join(entries))
    return load(tmp_path / "ops.yaml")


def test_the_shipped_kernel_entries_register_the_variants_aten_dispatches_to_a_kernel():
    found = {op.qualified_name: op.aten_variants for op in load(ROOT / "ops.yaml").compute_ops}
    assert found == {
        "frexp.Tensor": (("out", "frexp.Tensor_out"),),  # frexp.Tensor is aten's composite over it
        "take": (("functional", "take"), ("out", "take.out")),
        "put": (("inplace", "put_"),),  # put clones and calls put_
        "_pdist_forward": (("functional", "_pdist_forward"),),
    }


def test_an_out_variant_resizes_its_outputs_and_the_in_place_one_writes_into_self():
    take = (ROOT / "generated" / "take_cpu.cpp").read_text()
    assert "at::Tensor& take_out_cpu(const at::Tensor& self, const at::Tensor& index, at::Tensor& out)" in take
    assert "at::native::resize_output(out, out_shape);" in take
    assert 'm.impl("take.out", TORCH_FN(take_out_cpu));' in take
    put = (ROOT / "generated" / "put_cpu.cpp").read_text()
    # into self where it is contiguous of 4-byte elements; else into a copy, of whole words for the
    # atomics on a 1- or 2-byte element, then copied back
    assert "at::Tensor out_w = mpsgen::compute::working_output(self, self.sizes(), self.options(), true);" in put
    assert "self.copy_(out_w);" in put
    assert "mpsgen::compute::word_bytes(out_c)" in put
    frexp = (ROOT / "generated" / "frexp_Tensor_cpu.cpp").read_text()
    assert "std::tuple<at::Tensor&, at::Tensor&> frexp_Tensor_out_cpu(const at::Tensor& self, at::Tensor& mantissa, " \
           "at::Tensor& exponent)" in frexp


@pytest.mark.parametrize("entry, edit, says", [
    ("take(", ("take(Tensor self, Tensor index)", "take(Tensor self, Tensor idx)"),
     "key 'func': the schema differs from aten's"),
    ("put(", ("out: {init: self}", "out: {shape: self.shape}"),
     "key 'compute.outputs': aten::put_ writes into 'self'"),
    ("frexp.Tensor(", ("(Tensor mantissa, Tensor exponent)", "(Tensor m, Tensor exponent)"),
     "key 'compute.outputs': expected a mapping of each output (m, exponent)"),
    ("take(", ("tensors: {index: long}", "tensors: {index: int}"), "'index' is no input Tensor of dtype long"),
    ("put(", ("require: index.numel() == source.numel()", "require: index.numel() == accumulate"),
     "'accumulate' is no int argument"),
    ("_pdist_forward(", ("    implements: aten\n", "    implements: aten\n    torch_has_mps: \"2.12\"\n"),
     "though 'torch_has_mps' says 2.12 and later have one"),
    ("_pdist_forward(", ("{self: [6, 5], p: 2.0}", "{self: {shape: [6, 5], high: x}, p: 2.0}"),
     "key 'samples': each sample maps every Tensor argument"),
    ("_pdist_forward(", ("    implements: aten\n", "    implements: atem\n"), "key 'implements': expected 'aten'"),
])
def test_a_bad_aten_kernel_entry_names_its_line_and_key(tmp_path, entry, edit, says):
    import torch

    if "torch_has_mps" in edit[1] and not torch.__version__.startswith("2.13"):
        pytest.skip("the release named is judged against torch 2.13's native_functions.yaml")
    text = shipped_entry(entry)
    assert edit[0] in text
    with pytest.raises(RegistryError) as e:
        registry_of(text.replace(*edit), tmp_path=tmp_path)
    assert says in str(e.value), str(e.value)
    assert re.match(r"ops\.yaml:\d+: ", str(e.value))


def test_a_check_translates_comparisons_of_sizes_and_floats():
    assert sizes.condition_to_cpp("index.numel() == source.numel() and not p < 0", {"index", "source"}, set(),
                                  {"p"}) == "((int64_t(index.numel()) == int64_t(source.numel())) && " \
                                            "!(double(p) < int64_t(0)))"
    with pytest.raises(sizes.SizeError, match="is not a condition"):
        sizes.condition_to_cpp("self.numel()", {"self"}, set())


# torch's own forward calls of the shipped kernel entries, each with its float32 inputs; the backward
# is aten's (derivatives.yaml), which calls our kernels again where its formula does (put's: take
# and put_) or reads our outputs (frexp's exponent, pdist's distances)
FORWARDS = '''
import torch
def forwards():
    torch.manual_seed(0)
    x, rows, src = torch.randn(4, 5), torch.randn(6, 3), torch.randn(5)
    index = torch.tensor([0, 7, -1, 12, 3])
    return {
        "take": (lambda a: torch.take(a, index), [x]),
        "frexp": (lambda a: torch.frexp(a).mantissa, [x]),
        "put": (lambda a, s: a.put(index, s), [x, src]),
        "put accumulate": (lambda a, s: a.put(torch.tensor([1, 1, 2, 0, 1]), s, accumulate=True), [x, src]),
        "pdist p=2": (lambda a: torch.pdist(a), [rows]),
        "pdist p=1.5": (lambda a: torch.pdist(a, p=1.5), [rows]),
    }
'''
GRADIENTS = FORWARDS + '''
import sys
import mpsgen.ops
from mpsgen import runtime
C = runtime.extension("mpsgen")
found = {}
for name, (fn, inputs) in forwards().items():
    inputs = [t.clone().requires_grad_() for t in inputs]
    C.cpu_take_launches()
    result = fn(*inputs)
    forward = sorted(set(C.cpu_take_launches()))
    torch.manual_seed(1)
    grads = torch.autograd.grad(result, inputs, torch.randn_like(result))
    found[name] = (grads, forward, sorted(set(C.cpu_take_launches())))
torch.save(found, sys.argv[1])
'''


def test_aten_differentiates_the_shipped_kernel_entries_through_our_kernels(tmp_path):
    """Under MPSGEN_ATEN_CPU_OVERRIDES torch's own aten ops run our CPU kernels, and autograd
    through them uses aten's formulas: each input's gradient must be torch's own (its CPU kernels
    in float64, cast), and the forward, and put's backward, must have launched ours."""
    import os
    import subprocess
    import sys

    import torch

    env = dict(os.environ, MPSGEN_ATEN_CPU_OVERRIDES="1", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", GRADIENTS, str(tmp_path / "grads.pt")], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    ours = torch.load(tmp_path / "grads.pt")
    scope: dict = {}
    exec(FORWARDS, scope)  # noqa: S102  (the cases above, run here by torch's own CPU kernels)
    kernels = {"take": "take_float", "frexp": "frexp_Tensor_float", "put": "put_float",
               "put accumulate": "put_float", "pdist p=2": "_pdist_forward_float", "pdist p=1.5": "_pdist_forward_float"}
    for name, (fn, inputs) in scope["forwards"]().items():
        inputs = [t.double().requires_grad_() for t in inputs]
        result = fn(*inputs)
        torch.manual_seed(1)
        expected = torch.autograd.grad(result, inputs, torch.randn_like(result, dtype=torch.float32).double())
        grads, forward, backward = ours[name]
        assert kernels[name] in forward, (name, forward)
        for g, e in zip(grads, expected):
            torch.testing.assert_close(g, e.float(), msg=lambda m: f"{name}: {m}")
    # take's backward puts the gradient into zeros with accumulate (put_); put's is grad.put(index,
    # zeros) for self and grad.take(index) for the source: ours
    assert "put_float" in ours["take"][2], ours["take"][2]
    assert {"put_float", "take_float"} <= set(ours["put"][2]), ours["put"][2]


SUB_WORD_PUT = '''
import torch, mpsgen.ops
from mpsgen import runtime
C = runtime.extension("mpsgen")
for dtype in (torch.int8, torch.int16, torch.float16, torch.bool):
    base = torch.arange(8).to(dtype)
    view = base[1:4]  # its elements share their 4-byte words with base's others
    C.cpu_take_launches()
    view.put_(torch.tensor([0, 2, 2]), torch.tensor([10, 20, 30]).to(dtype), accumulate=True)
    print(str(dtype)[6:], base.tolist(), C.cpu_take_launches())
'''


@pytest.mark.parametrize("check", ["0", "1"])
def test_put_of_one_and_two_byte_elements_stays_within_the_tensor(check):
    """c10/metal's AtomicType adds to a 1- or 2-byte element by a compare-and-swap of the 4-byte
    word around it: launched into whole words of its own (compute_host.h's working_output), the
    neighbours of a view keep their values, and the checked variant finds no access out of
    bounds. Hand-computed: [1, 2, 3] + (10 at 0; 20 and 30 at 2)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, MPSGEN_ATEN_CPU_OVERRIDES="1", MPSGEN_CPU_CHECK=check, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", SUB_WORD_PUT], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout.splitlines()
    for name in ("int8", "int16", "float16"):
        values = "[0, 11, 2, 53, 4, 5, 6, 7]" if name != "float16" else "[0.0, 11.0, 2.0, 53.0, 4.0, 5.0, 6.0, 7.0]"
        assert f"{name} {values} ['put_{'char' if name == 'int8' else 'short' if name == 'int16' else 'half'}']" in out, out
    assert "bool [False, True, True, True, True, True, True, True] ['put_bool']" in out, out
