"""Verifying what was emitted where no Metal compiler runs: `python -m codegen check-metal`
compiles every generated .metal with clang's Metal-strict flags (check_metal) and parses the
host and support sources with clang (clang_check); each problem is a Finding."""
