// Element-wise comparison of two engine results with type-aware tolerances.
#include "engine/Compare.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace loopc {

namespace {

std::string shapeText(const HostArray &array) {
  std::string text = scalarTypeName(array.type);
  for (int64_t extent : array.shape)
    text += "[" + std::to_string(extent) + "]";
  return text;
}

std::vector<int64_t> unflatten(uint64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = static_cast<int64_t>(flat % static_cast<uint64_t>(shape[d]));
    flat /= static_cast<uint64_t>(shape[d]);
  }
  return index;
}

bool floatsMatch(double expected, double actual, double relative, double absolute) {
  if (std::isnan(expected) || std::isnan(actual))
    return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual))
    return expected == actual;
  double scale = std::max(std::fabs(expected), std::fabs(actual));
  return std::fabs(expected - actual) <= absolute + relative * scale;
}

} // namespace

CompareOptions compareOptionsFor(const KernelDecl &kernel, const KernelArgs &inputs) {
  CompareOptions options;
  for (size_t position = 0; position < kernel.params.size(); ++position) {
    options.singlePrecisionTerms |= kernel.params[position]->type.element == ScalarType::F32;
    if (kernel.params[position]->intent == Intent::Out)
      continue;
    const HostArray &input = inputs.params[position];
    options.reductionLength = std::max<uint64_t>(options.reductionLength, input.elementCount());
    // An integer scalar may bound a loop (`for i in 0..n`).
    constexpr uint64_t kLongestBound = uint64_t{1} << 40;
    if (input.shape.empty() && isInteger(input.type))
      options.reductionLength =
          std::max(options.reductionLength,
                   std::min(kLongestBound, static_cast<uint64_t>(std::llabs(input.getAsInt(0)))));
    if (isFloat(input.type))
      for (size_t i = 0; i < input.elementCount(); ++i)
        if (double value = std::fabs(input.getAsDouble(i)); std::isfinite(value))
          options.termMagnitude = std::max(options.termMagnitude, value);
  }
  return options;
}

double defaultRelativeTolerance(ScalarType type, uint64_t reductionLength,
                                bool singlePrecisionTerms) {
  double epsilon = type == ScalarType::F32 || singlePrecisionTerms ? 0x1p-23 : 0x1p-52;
  // Rounding errors of a sum of n terms typically grow like sqrt(n) ulps;
  // the factor leaves room for unlucky orders without hiding real bugs,
  // whose errors are of the order of the values themselves.
  double length = static_cast<double>(std::max<uint64_t>(reductionLength, 1));
  return 16 * epsilon * std::sqrt(length);
}

CompareReport compareArrays(const HostArray &expected, const HostArray &actual,
                            const CompareOptions &options) {
  CompareReport report;
  if (expected.type != actual.type || expected.shape != actual.shape) {
    report.matches = false;
    report.problem = "expected " + shapeText(expected) + ", got " + shapeText(actual);
    return report;
  }
  size_t count = expected.elementCount();
  auto recordMismatch = [&](size_t i) {
    if (report.mismatchCount++ == 0) {
      report.firstIndex = unflatten(i, expected.shape);
      report.expectedValue = expected.getAsDouble(i);
      report.actualValue = actual.getAsDouble(i);
    }
  };

  if (!isFloat(expected.type)) {
    for (size_t i = 0; i < count; ++i)
      if (expected.getAsInt(i) != actual.getAsInt(i))
        recordMismatch(i);
  } else {
    // The absolute part covers results near zero produced by cancellation:
    // their error is relative to the magnitude of the terms, which the
    // largest value of the array or of the inputs approximates.
    double largest = options.termMagnitude;
    for (size_t i = 0; i < count; ++i) {
      double value = expected.getAsDouble(i);
      if (std::isfinite(value))
        largest = std::max(largest, std::fabs(value));
    }
    report.relativeTolerance =
        options.relativeTolerance > 0
            ? options.relativeTolerance
            : defaultRelativeTolerance(expected.type, options.reductionLength,
                                       options.singlePrecisionTerms);
    report.absoluteTolerance = options.absoluteTolerance > 0 ? options.absoluteTolerance
                                                             : report.relativeTolerance * largest;
    for (size_t i = 0; i < count; ++i)
      if (!floatsMatch(expected.getAsDouble(i), actual.getAsDouble(i), report.relativeTolerance,
                       report.absoluteTolerance))
        recordMismatch(i);
  }
  report.matches = report.mismatchCount == 0;
  return report;
}

std::string CompareReport::describe(const std::string &name) const {
  if (matches)
    return name + ": matches";
  std::ostringstream out;
  out.precision(9);
  if (!problem.empty()) {
    out << name << ": " << problem;
    return out.str();
  }
  out << name;
  for (int64_t i : firstIndex)
    out << "[" << i << "]";
  out << ": expected " << expectedValue << ", got " << actualValue;
  out << " (" << mismatchCount << " element" << (mismatchCount == 1 ? "" : "s") << " differ";
  if (relativeTolerance > 0)
    out << "; tolerance " << relativeTolerance << " relative + " << absoluteTolerance
        << " absolute";
  out << ")";
  return out.str();
}

} // namespace loopc
