// Element-wise comparison of two engine results with type-aware tolerances.
#include "engine/Compare.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <span>
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

// The variables a range of `kernel` may be bounded by: those named in the
// bounds of its loops, redomaps and scans, and, as the callee's loops may use
// them, in the arguments of its kernel and function calls.
class BoundNames {
public:
  explicit BoundNames(const KernelDecl &kernel) { visit(*kernel.body); }
  bool contains(const VarDecl *var) const { return names_.contains(var); }

private:
  void visit(const Stmt &stmt) {
    if (const auto *block = stmt.as<BlockStmt>()) {
      for (const StmtPtr &inner : block->stmts)
        visit(*inner);
    } else if (const auto *decl = stmt.as<DeclStmt>()) {
      visitExpr(decl->init.get(), false);
    } else if (const auto *assign = stmt.as<AssignStmt>()) {
      for (const ExprPtr &index : assign->indices)
        visitExpr(index.get(), false);
      visitExpr(assign->value.get(), false);
    } else if (const auto *scan = stmt.as<ScanStmt>()) {
      visitRanges(scan->ranges);
      visit(*scan->write);
    } else if (const auto *loop = stmt.as<ForStmt>()) {
      visitRanges({&loop->range, 1});
      visit(*loop->body);
    } else if (const auto *parfor = stmt.as<ParforStmt>()) {
      visitRanges(parfor->ranges);
      visit(*parfor->body);
    } else if (const auto *branch = stmt.as<IfStmt>()) {
      visitExpr(branch->cond.get(), false);
      visit(*branch->thenBody);
      if (branch->elseBody)
        visit(*branch->elseBody);
    } else if (const auto *call = stmt.as<CallStmt>()) {
      for (const ExprPtr &arg : call->args)
        visitExpr(arg.get(), true);
    }
  }

  void visitRanges(std::span<const Range> ranges) {
    for (const Range &range : ranges) {
      visitExpr(range.lo.get(), true);
      visitExpr(range.hi.get(), true);
    }
  }

  // `bounds`: the names in `expr` may bound a loop.
  void visitExpr(const Expr *expr, bool bounds) {
    if (!expr)
      return;
    if (const auto *name = expr->as<NameExpr>()) {
      if (bounds && name->decl)
        names_.insert(name->decl);
    } else if (const auto *index = expr->as<IndexExpr>()) {
      for (const ExprPtr &i : index->indices)
        visitExpr(i.get(), bounds);
    } else if (const auto *call = expr->as<CallExpr>()) {
      for (const ExprPtr &arg : call->args)
        visitExpr(arg.get(), bounds || !call->isBuiltin);
    } else if (const auto *cast = expr->as<CastExpr>()) {
      visitExpr(cast->operand.get(), bounds);
    } else if (const auto *unary = expr->as<UnaryExpr>()) {
      visitExpr(unary->operand.get(), bounds);
    } else if (const auto *binary = expr->as<BinaryExpr>()) {
      visitExpr(binary->lhs.get(), bounds);
      visitExpr(binary->rhs.get(), bounds);
    } else if (const auto *conditional = expr->as<ConditionalExpr>()) {
      visitExpr(conditional->cond.get(), bounds);
      visitExpr(conditional->thenExpr.get(), bounds);
      visitExpr(conditional->elseExpr.get(), bounds);
    } else if (const auto *redomap = expr->as<RedomapExpr>()) {
      visitRanges(redomap->ranges);
      visitExpr(redomap->neutral.get(), bounds);
      visitExpr(redomap->body.get(), bounds);
    }
  }

  std::set<const VarDecl *> names_;
};

// An element as a mismatch shows it: integers exactly, floats to 9 digits
// (enough to tell two f32 values apart).
std::string valueText(const HostArray &array, size_t i) {
  if (!isFloat(array.type))
    return std::to_string(array.getAsInt(i));
  std::ostringstream out;
  out.precision(9);
  out << array.getAsDouble(i);
  return out.str();
}

} // namespace

CompareOptions compareOptionsFor(const KernelDecl &kernel, const KernelArgs &inputs) {
  CompareOptions options;
  BoundNames bounds(kernel);
  for (size_t position = 0; position < kernel.params.size(); ++position) {
    options.singlePrecisionTerms |= kernel.params[position]->type.element == ScalarType::F32;
    if (kernel.params[position]->intent == Intent::Out)
      continue;
    const HostArray &input = inputs.params[position];
    options.reductionLength = std::max<uint64_t>(options.reductionLength, input.elementCount());
    // An integer scalar may bound a loop (`for i in 0..n`); one that bounds
    // none (a seed, a tag) says nothing of the reductions.
    constexpr uint64_t kLongestBound = uint64_t{1} << 40;
    if (input.shape.empty() && isInteger(input.type) &&
        bounds.contains(kernel.params[position].get()))
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
      report.expectedValue = valueText(expected, i);
      report.actualValue = valueText(actual, i);
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
