// Makes the extension importable as `mpsgen._C`. The ops themselves register
// through TORCH_LIBRARY static initializers when the library loads.
#include <Python.h>

#include <torch/headeronly/version.h>

#include <exception>

#include "bindings.h"
#include "kernel_lookup.h"

// The torch this extension is compiled against. mpsgen/runtime.py finds it in the file before
// it loads the extension: under another torch the load fails with an undefined symbol, or worse.
extern "C" [[gnu::used]] const char mpsgen_built_against_torch[] = "mpsgen-built-against-torch " TORCH_VERSION "\n";

namespace mpsgen::generated {
bool register_aten_cpu_overrides();  // generated/registration.cpp
} // namespace mpsgen::generated

namespace {

PyObject* string_list(const std::vector<std::string>& names) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(names.size()));
  if (!list) return nullptr;
  for (size_t i = 0; i < names.size(); ++i) {
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), PyUnicode_FromString(names[i].c_str()));
  }
  return list;
}

// The host_names of every kernel the CPU backend holds, as a sorted list.
PyObject* cpu_kernel_names(PyObject*, PyObject*) {
  return string_list(mpsgen::cpu::kernel_names());
}

// The host_names launched since the last call, in launch order.
PyObject* cpu_take_launches(PyObject*, PyObject*) {
  return string_list(mpsgen::cpu::take_launches());
}

// Whether the kernels run their AVX2 variant, and those that have one their AVX-512 variant
// (support/cpu/kernel_launch.h).
PyObject* cpu_use_avx2(PyObject*, PyObject*) {
  return PyBool_FromLong(mpsgen::cpu::cpu_use_avx2());
}
PyObject* cpu_use_avx512(PyObject*, PyObject*) {
  return PyBool_FromLong(mpsgen::cpu::avx512_kernels() > 0);
}

// How many kernels have their AVX2 and their AVX-512 variant compiled, run here or not.
PyObject* cpu_compiled_variants(PyObject*, PyObject*) {
  return Py_BuildValue("{s:i,s:i}", "avx2", mpsgen::cpu::compiled_variant_kernels(1), "avx512",
                       mpsgen::cpu::compiled_variant_kernels(2));
}

// Registers the CPU kernels of every `implements: aten` entry for torch's own aten ops
// in this process; False if already done. Only `import mpsgen` with
// MPSGEN_ATEN_CPU_OVERRIDES=1 calls it: it changes what torch's CPU ops compute.
PyObject* register_aten_cpu_overrides(PyObject*, PyObject*) {
  try {
    return PyBool_FromLong(mpsgen::generated::register_aten_cpu_overrides());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"cpu_kernel_names", cpu_kernel_names, METH_NOARGS, "host_names of the CPU backend's kernels"},
    {"cpu_take_launches", cpu_take_launches, METH_NOARGS, "host_names launched since the last call"},
    {"cpu_use_avx2", cpu_use_avx2, METH_NOARGS, "whether the CPU kernels run their AVX2 + F16C variant"},
    {"cpu_use_avx512", cpu_use_avx512, METH_NOARGS, "whether the CPU kernels that have one run their AVX-512 variant"},
    {"cpu_compiled_variants", cpu_compiled_variants, METH_NOARGS,
     "how many CPU kernels have their AVX2 and AVX-512 variants compiled: {'avx2': n, 'avx512': n}"},
    {"register_aten_cpu_overrides", register_aten_cpu_overrides, METH_NOARGS,
     "register the `implements: aten` entries' CPU kernels for torch's aten ops (opt-in)"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef mpsgen_module = {PyModuleDef_HEAD_INIT, "_C", "mpsgen generated ops", -1, methods};

} // namespace

PyMODINIT_FUNC PyInit__C(void) {
  PyObject* module = PyModule_Create(&mpsgen_module);
  // mpsgen._C.<op> and <op>_: the ops' Python functions (generated/bindings.cpp)
  if (module && PyModule_AddFunctions(module, mpsgen::generated::bindings::methods) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
