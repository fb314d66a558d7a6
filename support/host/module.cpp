// Makes the extension importable as `mpsgen._C`. The ops themselves register
// through TORCH_LIBRARY static initializers when the library loads.
#include <Python.h>

static PyModuleDef mpsgen_module = {PyModuleDef_HEAD_INIT, "_C", "mpsgen generated ops", -1, nullptr};

PyMODINIT_FUNC PyInit__C(void) {
  return PyModule_Create(&mpsgen_module);
}
