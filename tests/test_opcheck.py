"""mpsgen/opcheck.py: the structure classes that decide which samples torch's AOT/dynamic-shape
trace runs on, and that the reduced opcheck still catches the defects it is there for.

The classes are checked against the rule they implement (sizes and values do not matter,
except sizes 0 and 1 and which sizes are equal; dtypes, ranks, stride classes, requires_grad,
argument kinds and non-numeric values do), with hand-made tensors. The planted defects are
real registrations in namespaces of their own, made the way generated/library.py and
generated/autograd.cpp register mpsgen's ops, each with one defect.
"""
from __future__ import annotations

import pytest
import torch

from mpsgen.opcheck import opcheck_samples, out_refuses_grad, structure
from mpsgen.samples import Sample
from mpsgen.torch_library import register_variants


def s(*args, **kwargs) -> str:
    return structure(args, kwargs)


def test_sizes_other_than_0_and_1_do_not_matter_but_their_equality_does():
    assert s(torch.randn(5, 5)) == s(torch.randn(7, 7)) == "float32[a,a]"
    assert s(torch.randn(5, 3)) == s(torch.randn(2, 9)) == "float32[a,b]"
    assert s(torch.randn(5, 1)) == "float32[a,1]"
    assert s(torch.randn(0, 3)) == "float32[0,a]"
    assert s(torch.randn(())) == "float32[]"
    # the broadcast pattern: a row of the other's last size, or of its first
    assert s(torch.randn(5, 3), torch.randn(3)) == s(torch.randn(4, 6), torch.randn(6)) == "float32[a,b], float32[b]"
    assert s(torch.randn(5, 3), torch.randn(5, 1)) == "float32[a,b], float32[a,1]"
    assert s(torch.randn(5, 3), torch.randn(3)) != s(torch.randn(3, 3), torch.randn(3))


def test_stride_classes():
    base = torch.randn(3, 5)
    assert s(base) == "float32[a,b]"
    assert s(base.t()) == "float32[a,b] transposed(1,0)"
    assert s(torch.randn(5, 1).expand(5, 3)) == "float32[a,b] expanded(1)"
    assert s(torch.randn(5, 6)[:, ::2]) == "float32[a,b] sliced(0,1)"
    assert s(torch.randn(10)[2:]) == "float32[a] offset"
    assert len({s(t) for t in (base.t().contiguous(), base.t(), torch.randn(5, 1).expand(5, 3),
                               torch.randn(5, 6)[:, ::2])}) == 4
    # a 4-D channels-last tensor is dense and permuted: the order says which permutation
    assert s(torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)) == "float32[a,b,c,d] transposed(0,2,3,1)"


def test_dtypes_grad_and_arguments():
    x = torch.randn(4)
    assert s(x) != s(x.double()) != s(x.half())
    assert s(x.requires_grad_()) == "float32[a] grad"
    y = torch.randn(4)
    # numbers by kind, not value; values the trace specializes on by value
    assert s(y, 2) == s(y, 3) == "float32[a], int"
    assert s(y, 2.5) == "float32[a], float" != s(y, 2j)
    assert s(y, alpha=1) == s(y, alpha=7) == "float32[a], alpha=int"
    assert s(y, rounding_mode="floor") != s(y, rounding_mode="trunc")
    assert s(y, rounding_mode=None) == "float32[a], rounding_mode=None"
    assert s(y, True) != s(y, False) != s(y, 1)
    assert s(y, dtype=torch.float16) != s(y, dtype=torch.float32)


# --- planted defects --------------------------------------------------------------------

def _define(ns: str, fake_transposed_wrong=False, out_autograd=True,
            backward_untraceable: str | None = None) -> torch.library.Library:
    """`twice(self) = 2 * self` with its out= variant, registered as mpsgen registers an op:
    CPU kernels, a fake kernel, an Autograd kernel for the functional op and for out= (one that
    refuses inputs requiring grad), the out= decomposition at CompositeImplicitAutograd.
    backward_untraceable names the layout ("transposed", "expanded") whose backward no trace runs."""
    lib = torch.library.Library(ns, "DEF")
    lib.define("twice(Tensor self) -> Tensor")
    lib.define("twice.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    op = getattr(torch.ops, ns).twice

    def cpu(x):
        return torch.mul(x, 2)  # the result keeps a transposed input's strides

    def cpu_out(x, out):
        return out.copy_(torch.mul(x, 2))

    def fake(x):
        if fake_transposed_wrong and not x.is_contiguous() and x.stride(0) < x.stride(-1):
            return x.new_empty(x.shape)  # the defect: contiguous strides for a transposed input
        return torch.empty_like(x)

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.layout = ("expanded" if 0 in x.stride() else
                          "transposed" if not x.is_contiguous() and x.stride(0) < x.stride(-1) else "")
            with torch._C._AutoDispatchBelowAutograd():
                return op.default(x)

        @staticmethod
        def backward(ctx, g):
            if backward_untraceable and ctx.layout == backward_untraceable:
                return torch.from_numpy(g.numpy() * 2)  # the defect: right in eager, no trace can run it
            return 2 * g

    def refuse(x, out):
        if x.requires_grad:
            raise RuntimeError(f"{ns}::twice.out: functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        with torch._C._AutoDispatchBelowAutograd():
            return op.out(x, out=out)

    lib.impl("twice", cpu, "CPU")
    lib.impl("twice.out", cpu_out, "CPU")
    lib.impl("twice", Twice.apply, "Autograd")
    if out_autograd:
        lib.impl("twice.out", refuse, "Autograd")
    torch.library.register_fake(f"{ns}::twice", fake, lib=lib)
    register_variants(lib, "twice", "twice.out", None)
    return lib


@pytest.fixture
def planted(request):
    ns = f"mpsgen_planted_{request.node.name.split('[')[0][5:]}_{request.param[0]}"
    lib = _define(ns, **request.param[1])
    yield getattr(torch.ops, ns).twice
    lib._destroy()


def _samples() -> list[Sample]:
    """Two contiguous samples (one class), then a transposed one (a class of its own)."""
    grad = [torch.randn(4, 6), torch.randn(3, 7), torch.randn(6, 4).t()]
    return [Sample(f"sample[{i}]", (t.requires_grad_(),)) for i, t in enumerate(grad)]


@pytest.mark.parametrize("planted", [("sound", {})], indirect=True)
def test_a_sound_op_passes_with_one_trace_per_class(planted):
    traced = opcheck_samples(planted.default, _samples())
    assert traced == {"float32[a,b] grad": "sample[0]", "float32[a,b] transposed(1,0) grad": "sample[2]"}
    assert out_refuses_grad(planted.out, _samples()[0]) is None


@pytest.mark.parametrize("planted", [("fake", {"fake_transposed_wrong": True})], indirect=True)
def test_a_fake_kernel_wrong_for_transposed_inputs_only_is_caught(planted):
    with pytest.raises(AssertionError, match=r"sample\[2\] \(class float32\[a,b\] transposed\(1,0\) grad\).*"
                                             r"test_faketensor"):
        opcheck_samples(planted.default, _samples())


@pytest.mark.parametrize("planted", [("backward", {"backward_untraceable": "transposed"})], indirect=True)
def test_a_backward_untraceable_for_transposed_inputs_only_is_caught(planted):
    """Only the AOT trace runs the backward under fake tensors; the classes are traced together
    (mpsgen/opcheck.py), and the failure still names the class."""
    with pytest.raises(AssertionError, match=r"sample\[2\] \(class float32\[a,b\] transposed\(1,0\) grad\).*"
                                             r"test_aot_dispatch_dynamic"):
        opcheck_samples(planted.default, _samples())
    opcheck_samples(planted.default, _samples()[:2])  # the contiguous class alone passes


@pytest.mark.parametrize("planted", [("expanded", {"backward_untraceable": "expanded"})], indirect=True)
def test_a_backward_untraceable_for_expanded_inputs_only_is_caught_where_opcheck_misses_it(planted):
    """opcheck's own AOT check clones its inputs, which makes an expanded one dense: the op's
    trace never sees it. mpsgen's check clones only what the op writes: this input as it is."""
    expanded = Sample("sample[0]", (torch.randn(4, 1).expand(4, 6).requires_grad_(),))
    torch.library.opcheck(planted.default, expanded.args, test_utils="test_aot_dispatch_dynamic")
    with pytest.raises(AssertionError, match=r"sample\[0\] \(class float32\[a,b\] expanded\(1\) grad\).*"
                                             r"test_aot_dispatch_dynamic"):
        opcheck_samples(planted.default, [expanded])


@pytest.mark.parametrize("planted", [("out", {"out_autograd": False})], indirect=True)
def test_an_out_variant_without_its_autograd_kernel_is_caught(planted):
    """torch's test_autograd_registration passes every op with a CompositeImplicitAutograd
    kernel, which an mpsgen out= variant has (its decomposition): it cannot see this defect.
    out_refuses_grad does, by torch's rule for out= (aten.exp.out refuses an input requiring grad)."""
    opcheck_samples(planted.out, [Sample("sample[0]", (torch.randn(4, 6),), {"out": torch.empty(4, 6)})])
    message = out_refuses_grad(planted.out, _samples()[0])
    assert message is not None and "did not refuse" in message


def test_torch_refuses_out_with_grad_as_out_refuses_grad_expects():
    """The oracle of out_refuses_grad is torch's own out= rule."""
    assert out_refuses_grad(torch.ops.aten.exp.out, Sample("x", (torch.randn(3).requires_grad_(),))) is None
