"""Command line: `python -m codegen generate`, `python -m codegen check` and
`python -m codegen check-metal` (Metal-strict check of generated/*.metal, codegen/verify/check_metal.py,
then clang over the C++ units, codegen/verify/clang_check.py) and `python -m codegen check-macos` (the
macOS arm64 cross-build and its symbol check, codegen/verify/macos_build.py)."""
from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

from .emit import stamp, writer
from .registry import yaml_source

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument("command", choices=["generate", "check", "check-metal", "check-macos", "export-pytorch"],
                        help="generate: write generated/; check: fail if generated/ is stale; "
                             "check-metal: reject what Metal does not allow in generated/*.metal, then "
                             "compile what Linux builds with clang, syntax only; check-macos: compile "
                             "every unit of the Mac build for aarch64-macos, link, and resolve its symbols; "
                             "export-pytorch: the named ops as an in-tree PyTorch change (codegen/export)")
    parser.add_argument("only", nargs="*", help="check-metal: only these ops (default: all); export-pytorch: the ops")
    parser.add_argument("--ops", type=Path, default=ROOT / "ops.yaml", help="the registry (default: ops.yaml)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: generated/); "
                        "export-pytorch: the patch file")
    parser.add_argument("--torch-tree", type=Path, default=None, help="export-pytorch: a PyTorch checkout to change")
    parser.add_argument("--check", action="store_true", help="export-pytorch: verify the patch offline against the "
                        "installed torch (codegen/export/check.py)")
    parser.add_argument("--stub", action="append", metavar="OP=STUB", help="export-pytorch: the DispatchStub OP's "
                        ".out calls, where torch's naming does not lead to it (repeatable)")
    args = parser.parse_args(argv)
    if args.command == "export-pytorch":
        from .export import cli as export_cli

        if not args.only:
            parser.error("export-pytorch takes the ops to export")
        try:
            stubs = export_cli.stub_option(args.stub)
        except ValueError as e:
            parser.error(str(e))
        return export_cli.main(args.ops, args.only, args.out, args.torch_tree, args.check, stubs=stubs)
    if args.torch_tree or args.check or args.stub:
        parser.error("--torch-tree, --check and --stub are export-pytorch's")
    args.out = args.out or ROOT / "generated"
    if args.only and args.command != "check-metal":
        parser.error(f"{args.command} takes no op names")
    if args.command == "check-metal":
        from .verify import check_metal

        return check_metal.main(args.out, args.only)
    if args.command == "check-macos":
        if args.only:
            parser.error("check-macos takes no op names: it builds the whole extension")
        from .verify import macos_build

        return macos_build.main(ROOT, args.out, ROOT / "build" / "macos-arm64" / "mpsgen")

    try:
        data = yaml_source.read(args.ops)
    except OSError as e:
        print(f"cannot read {args.ops}: {e.strerror or e}; nothing was written", file=sys.stderr)
        return 1
    # Unchanged ops.yaml and generator, generated/ as recorded: nothing to load or render.
    stamp_key = stamp.key(data, args.ops.name)
    known = stamp.fresh(args.out, stamp_key)
    if known is not None:
        n_files, n_ops = len(known["files"]), known["ops"]
        if args.command == "check":
            print(f"generated/ is fresh ({n_files} files, {n_ops} ops)")
        else:
            print(f"{n_ops} ops: wrote 0 file(s), removed 0, {n_files} unchanged")
        return 0

    # A run builds hundreds of thousands of objects that live to its end (YAML values, schemas,
    # the model, the rendered text) and next to no cyclic garbage (a few hundred objects for
    # 1,000 ops): the collector's passes over them free nothing and cost a tenth of a second.
    # Forked render workers inherit this. Restored after: tests call main() in-process.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(args, data, stamp_key)
    finally:
        if collecting:
            gc.enable()


def _run(args: argparse.Namespace, data: bytes, stamp_key: str) -> int:
    """Load, render and write (or compare, for `check`)."""
    from .registry import loader  # torchgen (and render: jinja2) only when there is work

    try:
        registry = loader.load(args.ops, data)
    except loader.RegistryError as e:
        print(f"{len(e.errors)} error(s) in {args.ops}; nothing was written:", file=sys.stderr)
        for message in e.errors:
            print(f"  {message}", file=sys.stderr)
        return 1
    # A first generate, into a folder that does not exist: the renderers (forked workers too)
    # write each file into its private stand-in as they render it; apply() renames it into place.
    staged = None
    if args.command == "generate" and not os.path.lexists(args.out):
        try:
            staged = writer.NewFolder(args.out)
        except writer.WriteError as e:
            return _cannot_write(args.out, e.errors)
    try:
        return _render_and_write(args, registry, stamp_key, staged)
    finally:
        if staged is not None:
            staged.discard()  # unless apply() renamed it into place


def _render_and_write(args: argparse.Namespace, registry, stamp_key: str, staged: writer.NewFolder | None) -> int:
    from .emit import render

    try:
        files = render.render(registry, sink=staged.write if staged else None)
    except OSError as e:  # a file could not be written into the new folder
        if staged is None:
            raise
        return _cannot_write(args.out, [f"{staged.failed(e)}: cannot write: {e.strerror or e}; nothing was changed"])
    p = writer.plan(args.out, files)
    if p.problems:
        print(f"{len(p.problems)} problem(s) with {args.out}; nothing was written:", file=sys.stderr)
        for message in p.problems:
            print(f"  {message}", file=sys.stderr)
        return 1
    if args.command == "check":
        if p.stale:
            print(f"generated/ is stale ({len(p.stale)} file(s)): {', '.join(p.stale)}", file=sys.stderr)
            print("run `python -m codegen generate`", file=sys.stderr)
            return 1
        stamp.record(args.out, stamp_key, files, len(registry.ops))
        print(f"generated/ is fresh ({len(files)} files, {len(registry.ops)} ops)")
        return 0
    try:
        writer.apply(args.out, files, p, staged=staged if p.new_folder else None)
    except writer.WriteError as e:
        stamp.forget(args.out)
        return _cannot_write(args.out, e.errors)
    n_ops = len(registry.ops) + len(registry.compute_ops)  # functor entries and kernel entries
    stamp.record(args.out, stamp_key, files, n_ops)
    print(f"{n_ops} ops: wrote {len(p.write)} file(s), removed {len(p.delete)}, "
          f"{len(files) - len(p.write)} unchanged")
    return 0


def _cannot_write(out: Path, errors: list[str]) -> int:
    print(f"cannot write {out}; nothing was written:", file=sys.stderr)
    for message in errors:
        print(f"  {message}", file=sys.stderr)
    return 1

if __name__ == "__main__":
    sys.exit(main())
