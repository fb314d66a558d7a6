"""Command line: `python -m codegen generate`, `python -m codegen check` and
`python -m codegen check-metal` (Metal-strict check of generated/*.metal, codegen/check_metal.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import loader, render, writer

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument("command", choices=["generate", "check", "check-metal"],
                        help="generate: write generated/; check: fail if generated/ is stale; "
                             "check-metal: reject what Metal does not allow in generated/*.metal")
    parser.add_argument("only", nargs="*", help="check-metal: only these ops (default: all)")
    parser.add_argument("--ops", type=Path, default=ROOT / "ops.yaml", help="the registry (default: ops.yaml)")
    parser.add_argument("--out", type=Path, default=ROOT / "generated", help="output folder (default: generated/)")
    args = parser.parse_args(argv)
    if args.only and args.command != "check-metal":
        parser.error(f"{args.command} takes no op names")
    if args.command == "check-metal":
        from . import check_metal

        return check_metal.main(args.out, args.only)

    try:
        registry = loader.load(args.ops)
    except loader.RegistryError as e:
        print(f"{len(e.errors)} error(s) in {args.ops}; nothing was written:", file=sys.stderr)
        for message in e.errors:
            print(f"  {message}", file=sys.stderr)
        return 1
    files = render.render(registry)
    p = writer.plan(args.out, files)
    if args.command == "check":
        if p.stale:
            print(f"generated/ is stale ({len(p.stale)} file(s)): {', '.join(p.stale)}", file=sys.stderr)
            print("run `python -m codegen generate`", file=sys.stderr)
            return 1
        print(f"generated/ is fresh ({len(files)} files, {len(registry.ops)} ops)")
        return 0
    writer.apply(args.out, files, p)
    print(f"{len(registry.ops)} ops: wrote {len(p.write)} file(s), removed {len(p.delete)}, "
          f"{len(files) - len(p.write)} unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
