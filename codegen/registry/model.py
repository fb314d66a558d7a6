"""The validated model of ops.yaml: frozen dataclasses, no knowledge of files."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from torchgen.model import FunctionSchema

from .argmodel import Arg, Check, Param, Selector, schema_args, transport_of
from .aten_schemas import variant_names
from .dtypes import DTYPES, Dtype


@dataclass(frozen=True)
class Location:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Registration:
    """One REGISTER_* line: the kernel computes `input` -> `output`."""

    input: str
    output: str
    opmath: bool = False
    line: int = 0  # ops.yaml line of the `dtypes` item it came from

    @property
    def input_dtype(self) -> Dtype:
        return DTYPES[self.input]

    @property
    def output_dtype(self) -> Dtype:
        return DTYPES[self.output]

    @property
    def compute(self) -> str:
        """The Metal type the kernel computes in, which its Scalar parameters travel
        in (`T` of `args:`): the output dtype, or the input's for bool results (the
        iterator's common dtype, which the host sends them in)."""
        return self.input if self.output == "bool" else self.output


@dataclass(frozen=True)
class DtypeTable:
    """What one set of an op's kernels registers: the op's `dtypes`, or the own `dtypes` of
    a `str` choice (`trunc: {kernel: div_trunc, dtypes: [float, integer]}`), with the
    promotion it implies. The host and the fake kernel check a call against the table of
    the kernel it runs (each table is an OpSpec / a Spec of its own)."""

    registrations: tuple[Registration, ...]
    kernels: tuple[str, ...]  # the kernels that register these dtypes
    spec: str  # the name of its OpSpec (C++) and Spec (Python): `div_spec`, `div_div_trunc_spec`
    choice: str = ""  # the `str` choice with its own dtypes, as errors name it (`rounding_mode='trunc'`)
    line: int = 0  # ops.yaml line of its `dtypes` (the choice's line for a choice's own)

    @property
    def promotes_int_to_float(self) -> bool:
        """Integer inputs produce a float result (TensorIterator's *_float_op)."""
        return any(
            r.input_dtype.kind in ("integer", "bool") and r.output_dtype.kind == "float"
            for r in self.registrations
        )

    @property
    def bool_output(self) -> bool:
        """A predicate or comparison: every kernel produces bool."""
        return all(r.output == "bool" for r in self.registrations)


@dataclass(frozen=True)
class XFail:
    dtype: str  # Metal type name
    reason: str
    samples: tuple[str, ...] = ()  # only these samples (e.g. "reference[64]"); () = the whole dtype


@dataclass(frozen=True)
class Gap:
    """A dtype torch's own MPS kernel supports (its MPS tests say so) that the entry does not
    register (`gaps:`), with the reason; tests/test_mps_dtypes.py holds the registry to it."""

    dtype: str  # Metal type name
    reason: str


@dataclass(frozen=True)
class Tolerance:
    """A looser op-output-match tolerance for one dtype, as PyTorch's tests override
    theirs per op (toleranceOverride), with the reason."""

    dtype: str  # Metal type name
    rtol: float
    atol: float
    reason: str


@dataclass(frozen=True)
class Derivative:
    """One `derivatives:` item: the gradient of input `arg`, a C++ expression in `grad`,
    `result` and the entry's arguments, as derivatives.yaml writes them."""

    arg: str
    formula: str
    line: int
    names: frozenset = frozenset()  # the names the formula reads


_FAMILIES = {1: "unary", 2: "binary", 3: "ternary"}


def variant_schemas(schema: FunctionSchema, args: list[Arg] | None = None, inplace: bool = True) -> dict[str, str]:
    """Functional, out= and in-place schemas, named as native_functions.yaml names them
    (`args`: schema_args(schema), if the caller has them). inplace: False for an op without
    an in-place variant (a `mask:` op, as aten's where)."""
    base, ov = str(schema.name.name.base), schema.name.overload_name
    args = schema_args(schema) if args is None else args
    pos = [a.decl for a in args if not a.kwarg_only]
    kw = [a.decl for a in args if a.kwarg_only]
    # aten's names where aten declares the op (`clamp.Tensor_out` beside `add.out`), else its usual scheme
    atens = variant_names(str(schema))
    out_name = atens.get("out") or (f"{base}.{ov}_out" if ov and ov != "Tensor" else f"{base}.out")
    inplace_name = atens.get("inplace") or (f"{base}_.{ov}" if ov else f"{base}_")
    star = ", *, " + ", ".join(kw) if kw else ""
    first = next(a for a in args if a.kind == "Tensor")  # polygamma_(Tensor(a!) self, int n)
    inplace_pos = [f"Tensor(a!) {first.name}", *(a.decl for a in args if not a.kwarg_only and a is not first)]
    schemas = {
        "functional": str(schema),
        "out": f"{out_name}({', '.join(pos)}, *, {', '.join(kw + ['Tensor(a!) out'])}) -> Tensor(a!)",
        "inplace": f"{inplace_name}({', '.join(inplace_pos)}{star}) -> Tensor(a!)",
    }
    if not inplace:
        del schemas["inplace"]
    return schemas


def inplace_order(args: list[Arg]) -> list[Arg]:
    """An in-place variant's arguments: the Tensor written to first (`self`), then the rest."""
    first = next(a for a in args if a.kind == "Tensor")
    return [first, *(a for a in args if a.name != first.name)]


@dataclass(frozen=True)
class Entry:
    """A callable entry of ops.yaml: an op with its functor, or a Scalar overload of one."""

    schema: FunctionSchema
    reference: str  # dotted path of the torch reference, e.g. torch.exp
    opinfo: str  # OpInfo name in op_db for samples ("" when none)
    xfails: tuple[XFail, ...]
    loc: Location
    derivatives: tuple[Derivative, ...] = ()
    # `mask:`: the first Tensor, a bool mask outside type promotion (where's condition); such an
    # op has no in-place variant (aten has no where_: writing into the mask makes no sense)
    mask: str = ""
    # `out_dtype:` the input dtypes (Metal names) whose out= must have the result dtype (torch's
    # neg.out, add.Scalar_out; a `mask:` op's by default, as torch's where); empty: out= casts
    exact_out: tuple[str, ...] = ()
    # `out_dtype: {complex: input}`: a complex out= of a complex input must have the input's dtype,
    # as torch's abs.out (it computes complex -> complex into a complex out=, casts into a real one)
    complex_out_input: bool = False

    @property
    def converted_scalars(self) -> tuple[str, ...]:
        """The Scalars a `mask:` op's overload converts to the result dtype, with torch's range
        check (where's at::scalar_tensor); none elsewhere."""
        return ()

    @cached_property
    def qualified_name(self) -> str:
        """`mul` or `mul.Scalar`: the torch.ops name with its overload."""
        return str(self.schema.name)

    @cached_property
    def base_name(self) -> str:
        """`add` for `add.Tensor`: the name messages give the op."""
        return str(self.schema.name.name.base)

    @cached_property
    def cname(self) -> str:
        """A C++ identifier for this entry's host functions."""
        return self.qualified_name.replace(".", "_")

    @cached_property
    def args(self) -> list[Arg]:
        return schema_args(self.schema)

    @cached_property
    def schemas(self) -> dict[str, str]:
        # no in-place variant for a `mask:` op, nor for one whose ScalarType argument sets the result's
        # dtype (aten has no full_like_: the result of self's dtype would ignore the argument)
        return variant_schemas(self.schema, self.args,
                               inplace=not self.mask and not any(a.kind == "ScalarType" for a in self.args))

    @cached_property
    def inplace_args(self) -> list[Arg]:
        return inplace_order(self.args)

    def derivative(self, arg: str) -> Derivative | None:
        return next((d for d in self.derivatives if d.arg == arg), None)

    out_names = ("out",)  # its out= variant's outputs

    @cached_property
    def schema_names(self) -> dict[str, str]:
        """The operator names (with overload) that m.impl() registers."""
        return {kind: s.split("(", 1)[0] for kind, s in self.schemas.items()}


@dataclass(frozen=True)
class Overload(Entry):
    """`mul.Scalar(Tensor self, Scalar other)`: runs the kernels of the op with the
    same base name, the Scalar arguments wrapped as 0-dim tensors (as torch does)."""

    scalar_args: tuple[str, ...] = ()  # the op's Tensor arguments passed as Scalars here

    @property
    def converted_scalars(self) -> tuple[str, ...]:
        return self.scalar_args if self.mask else ()


@dataclass(frozen=True)
class Op(Entry):
    name: str = ""  # kernel name: names the functor, the kernels and the generated files
    family: str = ""  # unary | binary | ternary: how many Tensors the kernels read
    functor: str = ""  # the functor struct(s) source
    # the dtypes the kernels register: the op's `dtypes` first, then a `str` choice's own
    tables: tuple[DtypeTable, ...] = ()
    functor_line: int = 0  # ops.yaml line that the first line of `functor` comes from
    overloads: tuple[Overload, ...] = ()
    params: tuple[Param, ...] = ()  # the non-Tensor arguments the kernels read, in schema order
    selector: Selector | None = None  # a `str` argument choosing among several functors
    given: tuple[tuple[tuple[str, ...], str], ...] = ()  # `given:`: (the Tensor? arguments given, kernel)
    alpha_check: bool = False  # torch's alpha_check of add/sub (`alpha_check: true`)
    checks: tuple[Check, ...] = ()  # argument conditions torch enforces (`checks:`)
    # `zero_divisor:` the Tensor whose zeros make an integer result raise on CPU (torch's div_floor)
    zero_divisor: str = ""
    # `dtype_defaults:` (argument, "max" | "lowest"): None means the dtype's limit (nan_to_num's posinf)
    dtype_defaults: tuple[tuple[str, str], ...] = ()
    # `result_dtype:` the Tensor whose dtype the result has (mish_backward's self); "": the promoted one
    result_like: str = ""
    dtype_arg: str = ""  # a ScalarType argument: the computation's dtype when given (`result_dtype:`)
    tolerances: tuple[Tolerance, ...] = ()  # op-output-match overrides, also for its overloads
    gaps: tuple[Gap, ...] = ()  # dtypes torch's MPS kernel supports that the op leaves out (`gaps:`)
    implements: str = ""  # "aten": registers kernels for torch's own aten::<op> (no def, fake kernel, autograd)
    replaces: str = ""  # "mps": an aten entry that replaces torch's own MPS kernel for the op
    # `torch_has_mps: "2.15"`: the first torch with its own MPS kernel for the op; `torch_runs_mps`:
    # the installed torch is one, so the entry's MPS kernel is not registered (its CPU ones are)
    torch_has_mps: str = ""
    torch_runs_mps: bool = False
    aten_variants: tuple[str, ...] = ()  # of functional/out/inplace, those aten has (implements: aten)

    @cached_property
    def variants(self) -> tuple[str, ...]:
        """The variants the host stubs register: all three, those aten has, or for a `mask:`
        op functional and out=."""
        return self.aten_variants if self.implements else tuple(self.schemas)

    @cached_property
    def result_options(self) -> tuple[tuple[str, str], ...]:
        """(field, argument) for each of the result's options the schema takes: its ScalarType
        (`result_dtype:`, the computation's dtype when given) and aten's *_like options, in the
        order of the host's mpsgen::ResultOptions."""
        present = {a.name for a in self.args}
        named = {"dtype": self.dtype_arg, **{f: f for f in ("layout", "device", "pin_memory", "memory_format")}}
        return tuple((f, a) for f, a in named.items() if a and a in present)

    @cached_property
    def impl_namespace(self) -> str | None:
        """The namespace the stubs register into when it is not the registry's: "aten"."""
        return "aten" if self.implements else None

    @cached_property
    def transport(self) -> str:
        """How the params reach the kernels: "none"; "alpha", one Scalar in the
        computation dtype or its opmath_t (REGISTER_*_ALPHA_OP, exec_*_kernel's alpha and
        scalar_arg_type; `alpha_type`); or "params",
        a struct `<name>_params<T>` (exec_*_kernel_with_params). A choice's kernel
        that reads fewer of them has its own (`kernel_transport`)."""
        return transport_of(self.params)

    def kernel_params(self, kernel: str) -> tuple[Param, ...]:
        """The params `kernel` reads: none for another entry's, its choice's `params:`, else all of the op's."""
        if kernel in self.shared_kernels:
            return ()
        read = self._reads.get(kernel)
        return self.params if read is None else tuple(p for p in self.params if p.name in read)

    @cached_property
    def _reads(self) -> dict[str, tuple[str, ...]]:
        return dict(self.selector.reads) if self.selector else {}

    def kernel_transport(self, kernel: str) -> str:
        return transport_of(self.kernel_params(kernel))

    def kernel_alpha_arg(self, kernel: str) -> str | None:
        """The Scalar `kernel` gets as its alpha (REGISTER_*_ALPHA_OP), if that is how it reads it."""
        return self.kernel_params(kernel)[0].name if self.kernel_transport(kernel) == "alpha" else None

    def alpha_type(self, alpha: str) -> str:
        """The Metal type of the alpha `alpha`: "T", the computation dtype, or "opmath", its
        opmath_t (float for half, int for int8: REGISTER_*_ALPHA_OP's DTYPEA)."""
        return next(p.metal for p in self.params if p.name == alpha)

    @cached_property
    def shared_kernels(self) -> dict[str, str]:
        """Kernels of other entries a choice runs (`{op: digamma}`): kernel -> the entry's name.
        The kernel is that entry's, registered in its .metal (and MPS library) once."""
        return {k: owner for k, owner, _ in self.selector.shared} if self.selector else {}

    @cached_property
    def own_kernels(self) -> list[str]:
        """The kernels this op's functor defines and its .metal registers."""
        return [k for k in self.kernels if k not in self.shared_kernels]

    def library(self, kernel: str) -> str:
        """The .metal (the MPS library) that registers `kernel`: the op's, or a shared kernel's
        entry's, whose kernel name names its files."""
        return kernel if kernel in self.shared_kernels else self.name

    @cached_property
    def call_groups(self) -> list[tuple[tuple[str, ...], str, str]]:
        """The kernels the host calls alike: (kernels, transport, library), in choice order;
        one group for an op whose kernels all read the op's params from its own library."""
        groups: dict[tuple[str, str], list[str]] = {}
        for k in self.kernels:
            groups.setdefault((self.kernel_transport(k), self.library(k)), []).append(k)
        return [(tuple(ks), t, lib) for (t, lib), ks in groups.items()]

    @cached_property
    def kernels(self) -> list[str]:
        """The kernel names (each with its `<kernel>_functor`): one, or one per `str` choice
        or per combination of `Tensor?` arguments given."""
        if self.given:
            return list(dict.fromkeys(k for _, k in self.given))
        return self.selector.kernels if self.selector else [self.name]

    def kernel_family(self, kernel: str) -> str:
        """unary | binary | ternary: how many Tensors this kernel reads (for a `given:` op,
        the required Tensors and those its combination gives)."""
        for combo, k in self.given:
            if k == kernel:
                return _FAMILIES[len(self.required_tensor_args) + len(combo)]
        return self.family

    @cached_property
    def optional_tensor_args(self) -> list[str]:
        """The `Tensor?` arguments, in schema order."""
        return [a.name for a in self.args if a.kind == "Tensor" and a.optional]

    @cached_property
    def required_tensor_args(self) -> list[str]:
        return [a.name for a in self.args if a.kind == "Tensor" and not a.optional]

    @cached_property
    def given_complete(self) -> bool:
        """`given:` lists a kernel for every combination of the Tensor? arguments (or there are none)."""
        return len(self.given) == (1 << len(self.optional_tensor_args)) if self.given else True

    @cached_property
    def given_message(self) -> str:
        """What the host and the fake kernel say for a combination of Tensor? arguments that
        `given:` lists no kernel for."""
        listed = "; ".join(", ".join(c) if c else "none of them" for c, _ in self.given)
        return (f"no kernel for the Tensor? arguments given ({', '.join(self.optional_tensor_args)}); "
                f"{self.loc} has kernels for: {listed}")

    @cached_property
    def uniform_inputs(self) -> bool:
        """The kernels read operands of one dtype, so the host casts mixed inputs first:
        REGISTER_BINARY_ALPHA_OP's cast kernels take no params struct (nor an opmath alpha,
        which reaches them as params do), and the project's ternary alpha kernels have no cast
        variants."""
        return self.transport != "none" and (
            self.family == "ternary" or
            (self.family == "binary" and (self.transport == "params" or self.alpha_type(self.alpha_arg) == "opmath")))

    @cached_property
    def registrations(self) -> tuple[Registration, ...]:
        """Every input dtype some kernel registers, once (the first table's registration of
        it): what the op takes, as tests and the main job enumerate it."""
        found: dict[str, Registration] = {}
        for r in self.all_registrations:
            found.setdefault(r.input, r)
        return tuple(found.values())

    @cached_property
    def all_registrations(self) -> tuple[Registration, ...]:
        """Every table's registrations (an input dtype may appear once per table)."""
        return tuple(r for t in self.tables for r in t.registrations)

    def table(self, kernel: str) -> DtypeTable:
        """The dtypes `kernel` registers: its `str` choice's own, or the op's."""
        return next((t for t in self.tables if kernel in t.kernels), self.tables[0])

    @cached_property
    def bool_output(self) -> bool:
        """A predicate or comparison: every kernel produces bool (the loader has every
        table agree)."""
        return self.tables[0].bool_output

    @cached_property
    def differentiable(self) -> bool:
        """Some kernel produces a floating or complex result, which autograd tracks; not a factory's."""
        return not self.factory and any(r.output_dtype.kind in ("float", "complex") for r in self.all_registrations)

    @cached_property
    def factory(self) -> bool:
        """The schema takes aten's factory options (full_like's layout, device, pin_memory): a new
        tensor, which autograd does not track, as torch's *_like functions' results."""
        return any(f in ("layout", "device", "pin_memory") for f, _ in self.result_options)

    @cached_property
    def complex_dtypes(self) -> bool:
        """Some kernel reads or writes a complex dtype: the op's .metal includes
        support/metal/mpsgen/complex_math.h, the complex helpers functors share."""
        return any("complex" in (r.input_dtype.kind, r.output_dtype.kind) for r in self.all_registrations)

    @cached_property
    def has_castout(self) -> bool:
        """out= of any dtype stores through castout kernels: torch's unary ops
        (REGISTER_UNARY_OP) and comparisons (REGISTER_BINARY_CASTOUT_OP)."""
        if self.transport != "none":
            return False
        return self.family == "unary" or (self.family == "binary" and self.bool_output)

    @cached_property
    def tensor_args(self) -> list[str]:
        return [a.name for a in self.args if a.kind == "Tensor"]

    @cached_property
    def alpha_arg(self) -> str | None:
        """The Scalar of the "alpha" transport (e.g. `alpha`, `lambd`)."""
        return self.params[0].name if self.transport == "alpha" else None

    @cached_property
    def mask_index(self) -> int:
        """The mask's position among the Tensor arguments (`mask:`), or -1."""
        return self.tensor_args.index(self.mask) if self.mask else -1

    @cached_property
    def result_like_index(self) -> int:
        """The position of `result_dtype:` among the Tensor arguments, or -1."""
        return self.tensor_args.index(self.result_like) if self.result_like else -1

    @cached_property
    def zero_divisor_index(self) -> int:
        """The position of `zero_divisor:` among the Tensor arguments, or -1."""
        return self.tensor_args.index(self.zero_divisor) if self.zero_divisor else -1

    @cached_property
    def promoting(self) -> list[str]:
        """Scalars that take part in type promotion (`promotes: true`)."""
        return [p.name for p in self.params if p.promotes]

    @cached_property
    def compute_types(self) -> list[str]:
        """The Metal types the kernels compute in, each with its params struct."""
        return list(dict.fromkeys(r.compute for r in self.all_registrations))

    @cached_property
    def entries(self) -> tuple[Entry, ...]:
        return (self, *self.overloads)


@dataclass(frozen=True)
class Registry:
    namespace: str
    ops: tuple[Op, ...]
    path: str
    compute_ops: tuple = ()  # the kernel entries (codegen/registry/compute_model.py's ComputeOp)

    @property
    def entries(self) -> list[Entry]:
        return [e for op in self.ops for e in op.entries]

    @property
    def own_ops(self) -> list[Op]:
        """The ops this registry defines as <namespace>::<op>."""
        return [op for op in self.ops if not op.implements]

    @property
    def aten_ops(self) -> list[Op]:
        """The entries that implement torch's own aten ops (`implements: aten`)."""
        return [op for op in self.ops if op.implements]
