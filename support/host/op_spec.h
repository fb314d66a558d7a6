// What a generated op is, as data: its name, where ops.yaml declares it, how its
// dtypes promote and the dtypes its kernels register. The generator writes one OpSpec
// per op into generated/op_specs.cpp; this header is all that file needs, so it
// compiles in a moment (it changes whenever an edit moves an op to another ops.yaml line).
#pragma once

#include <c10/core/ScalarType.h>

#include <vector>

namespace mpsgen {

struct Registered {
  c10::ScalarType input;   // the kernel's DTYPEI
  c10::ScalarType output;  // the kernel's DTYPEO
};

struct OpSpec {
  const char* name;            // "<namespace>::<name>", for error messages
  const char* origin;          // "ops.yaml:LINE", for error messages
  std::vector<const char*> inputs;  // the Tensor arguments' names, in kernel order
  bool int_to_float;           // integer inputs compute in the default float dtype
  bool bool_output;            // a comparison/predicate: kernels produce bool
  bool castout;                // out= of another dtype stores through castout kernels
  bool alpha_check;            // torch's add/sub alpha_check applies to ScalarArgs::alpha
  bool uniform_inputs;         // the kernels read one dtype: mixed inputs are cast to the common one
  int mask;                    // the input that is a bool mask (`mask:`), outside promotion; -1 if none
  int zero_divisor;            // the input whose zeros make an integer result raise on CPU; -1 if none
  int result_like;             // the input whose dtype the result has (`result_dtype:`); -1: the promoted one
  std::vector<Registered> registrations;
  // the `str` choice these dtypes belong to, for error messages ("rounding_mode='trunc'"),
  // when it gives its own (ops.yaml `choices: {trunc: {kernel: ..., dtypes: ...}}`); else ""
  const char* choice = "";
};

} // namespace mpsgen
