"""Suite-wide settings."""
import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _generator_cache_in_a_temporary_folder():
    """`python -m codegen` keeps its stamps (codegen/stamp.py) in a cache folder; the
    suite's many output folders would otherwise crowd the user's ~/.cache/mpsgen."""
    with tempfile.TemporaryDirectory(prefix="mpsgen-test-cache-") as folder:
        old = os.environ.get("MPSGEN_CACHE_DIR")
        os.environ["MPSGEN_CACHE_DIR"] = folder
        yield
        if old is None:
            os.environ.pop("MPSGEN_CACHE_DIR", None)
        else:
            os.environ["MPSGEN_CACHE_DIR"] = old
