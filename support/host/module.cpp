// Makes the extension importable as `mpsgen._C`. The ops themselves register
// through TORCH_LIBRARY static initializers when the library loads.
#include <Python.h>

#include "kernel_registry.h"

namespace {

// The host_names of every kernel the CPU backend holds, as a sorted list.
PyObject* cpu_kernel_names(PyObject*, PyObject*) {
  const auto names = mpsgen::cpu::kernel_names();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(names.size()));
  if (!list) return nullptr;
  for (size_t i = 0; i < names.size(); ++i) {
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), PyUnicode_FromString(names[i].c_str()));
  }
  return list;
}

PyMethodDef methods[] = {
    {"cpu_kernel_names", cpu_kernel_names, METH_NOARGS, "host_names of the CPU backend's kernels"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef mpsgen_module = {PyModuleDef_HEAD_INIT, "_C", "mpsgen generated ops", -1, methods};

} // namespace

PyMODINIT_FUNC PyInit__C(void) {
  return PyModule_Create(&mpsgen_module);
}
