"""mpsgen's generator: PyTorch MPS (and CPU-hosted) elementwise ops from ops.yaml.

One direction, a subpackage per stage:

    registry/  ops.yaml -> validated model   (loader, schema, arguments, kernels, model, ...)
    emit/      model -> templates/ -> generated/   (render, writer, stamp)
    build.py   generated/ -> the torch extension   (ninja, objcache.py, clang.py)
    verify/    generated .metal and host sources through clang   (check_metal, clang_check)
    export/    model -> an in-tree PyTorch change, verified offline   (plan, render, edits, check)

`__main__.py` runs them (`python -m codegen generate | check | check-metal | check-macos | export-pytorch`); `package.py`
is the build API a project's setup.py calls. Each stage imports only the ones before it.
"""
