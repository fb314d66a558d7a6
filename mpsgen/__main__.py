"""`python -m mpsgen ...`: the `mpsgen` command (mpsgen/cli.py)."""
import sys

from .cli import main

sys.exit(main())
