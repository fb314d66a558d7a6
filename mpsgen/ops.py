"""mpsgen's own ops, those of this repository's ops.yaml: `import mpsgen.ops` loads them
(torch.ops.mpsgen.*, and mpsgen.ops.<op> / mpsgen.<op> as Python functions).

Installed, the generated library.py is inside the package (mpsgen/generated/); in a
checkout it is the repository's generated/ folder beside the package.
"""
import sys
from pathlib import Path

from .runtime import load_ops

_HERE = Path(__file__).resolve().parent
LIBRARY = next((p for p in (_HERE / "generated" / "library.py", _HERE.parent / "generated" / "library.py")
                if p.is_file()), _HERE / "generated" / "library.py")

library = load_ops(globals(), LIBRARY, extension_name="mpsgen._C")

# mpsgen.<op> too, as plain attributes: a call never passes through mpsgen.__getattr__ (Python)
_package = sys.modules[__package__]
for _name in library.BINDINGS:
    setattr(_package, _name, globals()[_name])
setattr(_package, "library", library)
