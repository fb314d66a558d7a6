// What generated/bindings.cpp shares: calling an op from Python the way torch's own
// generated bindings (torch/csrc/autograd/generated/python_torch_functions.cpp) do.
#pragma once

#include <Python.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/python_arg_parser.h>


namespace mpsgen::generated::bindings {

extern PyMethodDef methods[];  // generated/bindings.cpp: mpsgen._C.<op>, mpsgen._C.<op>_

// Calls the op without the GIL, as torch's bindings do, and returns its result to Python.
// The arguments are held here, so an out= or in-place op's Tensor& binds to them.
template <typename Sig, typename... Args>
PyObject* call(const c10::TypedOperatorHandle<Sig>& op, Args... args) {
  at::Tensor result = [&]() -> at::Tensor {
    pybind11::gil_scoped_release no_gil;
    return op.call(args...);
  }();
  return THPVariable_Wrap(std::move(result));
}

// A call whose arguments have __torch_function__ goes through torch.ops.<ns>.<name>, which
// handles it as for any op (Python subclasses, modes, torch.compile's tracing).
inline PyObject* via_torch_ops(const char* ns, const char* name, PyObject* args, PyObject* kwargs) {
  PyObject* torch = PyImport_ImportModule("torch");
  if (!torch) return nullptr;
  PyObject* ops = PyObject_GetAttrString(torch, "ops");
  Py_DECREF(torch);
  PyObject* space = ops ? PyObject_GetAttrString(ops, ns) : nullptr;
  Py_XDECREF(ops);
  PyObject* op = space ? PyObject_GetAttrString(space, name) : nullptr;
  Py_XDECREF(space);
  if (!op) return nullptr;
  PyObject* result = PyObject_Call(op, args, kwargs);
  Py_DECREF(op);
  return result;
}

} // namespace mpsgen::generated::bindings
