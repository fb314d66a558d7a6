"""Reading the registry: ops.yaml (yaml_source) -> validated entries (loader and the checks it
runs: schema, arguments, kernels, formulas, expectations) -> the model (model, dtypes).

`from mpsgen.codegen.registry.loader import load, RegistryError`. Nothing here is imported
eagerly: `python -m codegen generate` with nothing to do reads no torchgen.
"""
