"""The `mpsgen` command (also `python -m mpsgen`), run inside a project: the folder with a
pyproject.toml whose [tool.mpsgen] table names the package (or below it).

    mpsgen init DIR --namespace NAME   start a project: ops.yaml, setup.py, package, tests
    mpsgen new OP [--aten]             add aten's operator OP to ops.yaml (functor left to write)
    mpsgen new OP --kernel [--aten]    add OP as a kernel entry (body left to write); OP is aten's
                                       operator or a schema of the project's own, in quotes
    mpsgen generate | check            write generated/ / fail if it is stale
    mpsgen check-metal [OP ...]        reject what Metal does not allow; clang over the C++ units
    mpsgen check-macos                 compile the Mac build for aarch64-macos on any machine, link it,
                                       and resolve every symbol against torch's macOS wheel
    mpsgen show OP                     print OP's generated .metal and host stubs
    mpsgen build [--no-cache]          generate, then build the extension in place (ninja; compiled
                                       units come from the machine's object cache when they can)
    mpsgen test [OP ...] [--quick]     op-output-match of those ops (default: all) against torch
    mpsgen variants [OP ...]           every CPU kernel variant this machine runs (baseline, AVX2,
                                       AVX-512) gives the baseline's bits on the ops' samples (build
                                       with MPSGEN_CPU_VARIANTS=all first)
    mpsgen doctor [--out FILE]         on a Mac: toolchain, build, every op on mps against torch's
                                       CPU op; elsewhere: check-macos. One report file to attach
    mpsgen export-pytorch OP [OP ...] (--out PATCH | --torch-tree DIR) [--check] [--stub OP=STUB]
                                       the ops as an in-tree PyTorch change: a diff against the
                                       installed torch's files, or written into a PyTorch checkout;
                                       --check verifies the diff offline (docs/export-pytorch.md)
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

COMMANDS = ("init", "new", "generate", "check", "check-metal", "check-macos", "show", "build", "test", "variants",
            "doctor", "export-pytorch")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mpsgen", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("names", nargs="*", metavar="ARG",
                        help="init: DIR; new, show: OP; test, variants, check-metal, export-pytorch: OPs")
    parser.add_argument("--namespace", help="init: the project's namespace, which names its package too")
    parser.add_argument("--aten", action="store_true", help="new: implement torch's own aten operator "
                        "(`implements: aten`) instead of defining <namespace>::OP")
    parser.add_argument("--kernel", action="store_true", help="new: a kernel entry (`compute:`, a Metal compute "
                        "kernel) instead of a functor entry; OP may be a schema of the project's own op")
    parser.add_argument("--quick", action="store_true", help="test: skip the large samples")
    parser.add_argument("--no-cache", action="store_true", help="build: compile every unit that changed, without "
                        "reading or writing the object cache (codegen/objcache.py)")
    parser.add_argument("--out", type=Path, default=None, help="doctor: the report file (default: "
                        "mpsgen-doctor.txt in the project); export-pytorch: the patch file")
    parser.add_argument("--torch-tree", type=Path, default=None, help="export-pytorch: a PyTorch checkout to change")
    parser.add_argument("--check", action="store_true", help="export-pytorch: verify the patch offline")
    parser.add_argument("--stub", action="append", metavar="OP=STUB", help="export-pytorch: the DispatchStub OP's "
                        ".out calls, where torch's naming does not lead to it (repeatable)")
    parser.add_argument("--project", type=Path, default=None, help="the project folder (default: found from "
                        "the current directory up)")
    args = parser.parse_args(argv)
    from .scaffold import ScaffoldError

    try:
        return _run(parser, args)
    except (ScaffoldError, LookupError, ValueError) as e:
        print(f"mpsgen {args.command}: {e}", file=sys.stderr)
        return 1


def _one(parser, args, what: str) -> str:
    if len(args.names) != 1:
        parser.error(f"{args.command} takes one {what}")
    return args.names[0]


def _run(parser, args) -> int:
    from . import scaffold
    from .codegen.package import find_project, generate

    if args.command == "init":
        folder = Path(_one(parser, args, "folder"))
        if not args.namespace:
            parser.error("init needs --namespace NAME")
        written = scaffold.init(folder, args.namespace)
        print(f"wrote {folder}: {', '.join(map(str, written))}\n"
              f"next: cd {folder}; mpsgen new OP (or edit ops.yaml); mpsgen build; mpsgen test")
        return 0

    project = find_project(args.project)
    if args.command == "new" and args.kernel:
        from . import scaffold_kernel

        print(scaffold_kernel.new_kernel(project, _one(parser, args, "aten operator or schema"), aten=args.aten),
              end="")
        print(f"added to {project.ops}: write its body, then `mpsgen build` and `mpsgen test`")
        return 0
    if args.command == "new":
        print(scaffold.new(project, _one(parser, args, "aten operator"), aten=args.aten), end="")
        print(f"added to {project.ops}: write its functor, then `mpsgen build` and `mpsgen test`")
        return 0
    if args.command in ("generate", "check"):
        if args.names:
            parser.error(f"{args.command} takes no op names")
        return generate(project, args.command)
    if args.command == "check-metal":
        from .codegen.verify import check_metal

        return check_metal.main(project.generated, args.names)
    if args.command == "check-macos":
        if args.names:
            parser.error("check-macos takes no op names: it builds the whole extension")
        from .codegen.verify import macos_build

        if generate(project, "check"):
            print(f"mpsgen check-macos: {project.generated} is stale: run `mpsgen generate` (or build) first",
                  file=sys.stderr)
            return 1
        return macos_build.main(project.root, project.generated, project.root / "build" / "macos-arm64" / project.package)
    if args.command == "show":
        for path in scaffold.show(project, _one(parser, args, "op")):
            print(f"// ===== {path} =====\n{path.read_text()}")
        return 0
    if args.command == "build":
        return build(project.root, cache=not args.no_cache)
    if args.command == "export-pytorch":
        from .codegen.export import cli as export_cli

        if not args.names:
            parser.error("export-pytorch takes the ops to export")
        return export_cli.main(project.ops, args.names, args.out, args.torch_tree, args.check, project.generated,
                               export_cli.stub_option(args.stub))
    if args.command == "doctor":
        from . import doctor

        return doctor.main(project, args.out)
    project.use_in_place_build()
    if args.command == "variants":
        from . import variants

        return variants.main([*args.names, "--ops", str(project.ops), "--loads", project.loads])
    # test: the main job's op-output-match, on the in-place build when there is one
    from . import report

    return report.main([*args.names, "--ops", str(project.ops), "--loads", project.loads,
                        *(["--quick"] if args.quick else [])])


def build(root: Path, cache: bool = True) -> int:
    """`python setup.py build_ext --inplace` in the project: generate, then ninja on every core."""
    env = {**os.environ, "MAX_JOBS": os.environ.get("MAX_JOBS") or str(os.cpu_count() or 1)}
    if not cache:
        env["MPSGEN_OBJECT_CACHE"] = "0"
    return subprocess.run([sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"], cwd=root,
                          env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
