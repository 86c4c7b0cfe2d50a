// The values of a `loopc repl` session and the input that computes them
// (docs/repl.md): `let NAME = ...` binds a value, anything else that is not a
// definition or a command is evaluated and printed. What may be evaluated:
//  - an expression of the language (`1 + 2`, `sqrt(2.0)`, `redomap(+, 0.0,
//    i in 0..n) A[i][i]`), over the session's values and its fns, typed by
//    the language's rules: it is checked and run as a kernel of its own;
//  - a call of a kernel of the session (`let C = matmul(A, B)`): its `in`
//    and `inout` arrays and scalars from the arguments, its sizes inferred
//    from them; its `out` parameters are the result (several bound with
//    `let (C, D) = k(...)`), its `inout` arrays updated in place;
//  - arrays made from nothing: zeros, ones, iota, random, linspace, load,
//    literals (`[[1, 2], [3, 4]]`, `f32([1, 2])`), and an array converted
//    element by element (`f64(A)`);
//  - a value's name, or a part of an array (`A[0]`, `A[0:4, 1:3]`) to look at.
// Values are HostArrays (a scalar is of rank 0), on the host, or with the
// GPU as the session's device, arrays in GPU memory (ReplDeviceValues.h),
// and are printed like NumPy's: the type, then the elements, the corners of
// a large array around `...`.
#pragma once

#include "engine/HostArray.h"
#include "frontend/Loader.h"

#include <iosfwd>
#include <map>
#include <memory>
#include <string>

namespace loopc::driver {

// The session's program, as the evaluator compiles its input into it.
struct ReplProgram {
  std::string definitions; // the text of the definitions so far
  LoadOptions options;     // how the REPL loads it (the files it has loaded)
};

class ReplDeviceValues;

class ReplValues {
public:
  ReplValues(std::ostream &out, std::ostream &err);
  ~ReplValues();

  // Whether `input` (whole, trimmed) is for the evaluator: not a definition
  // (kernel, fn, assoc, import, an attribute) nor a command.
  static bool evaluates(const std::string &input);

  // Evaluates `input` on `device` ("" for the best one), printing the result
  // or the error; false after an error.
  bool evaluate(const std::string &input, const ReplProgram &program, const std::string &device);

  // :who: each value with its type.
  void list() const;
  // :print NAME [--full]: a value whole, or its corners.
  bool print(const std::string &name, bool full) const;
  // The names of the values, for completion.
  std::vector<std::string> names() const;
  void clear();

private:
  // The GPU memory of the values, opened when `device` is the GPU (or the
  // best device, and there is one); null when values stay on the host.
  ReplDeviceValues *gpuFor(const std::string &device);
  // `value` on the host, copied from the GPU when it is there.
  Expected<HostArray> onHost(const HostArray &value) const;

  std::ostream &out_;
  std::ostream &err_;
  std::map<std::string, HostArray> values_;
  std::unique_ptr<ReplDeviceValues> gpu_;
  bool noGpu_ = false; // no GPU was found for the best device
};

// `value` as the REPL prints it: `f32[3][3]` and the rows of its elements
// (only the first and last three along each dimension past six, with `...`,
// unless `full`); a scalar alone.
std::string formatValue(const HostArray &value, bool full = false);

} // namespace loopc::driver
