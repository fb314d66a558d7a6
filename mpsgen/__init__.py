"""Loads the mpsgen extension: its ops appear as torch.ops.<namespace>.<op>."""
import torch  # noqa: F401  (the extension links against torch's libraries)

from . import _C  # noqa: F401  (static initializers register the ops)
