// specialize_sizes: a kernel compiled for the run-time values of its small
// window sizes. A size that bounds a loop inside a parfor (a filter's K in a
// convolution, a short inner dimension) is usually small, and as a symbol it
// hides what the optimizations need: a window loop of unknown length is not
// unrolled, and a box that spans it has no constant size, so stage_shared
// cannot stage it (cnn_conv's input windows). An engine knows the sizes when
// it runs a kernel: each size of at most kLargestSpecializedSize that bounds
// such a loop is replaced by its value everywhere in the kernel, and the
// engine keeps one compiled kernel per combination of those values
// (CompiledKernelCache; the values are size choices of the Function). GPU
// pipeline only; `loopc compile` knows no sizes
// and specializes nothing; `--skip-pass specialize_sizes` measures what it
// brings.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Window loops this short are worth a kernel of their own each.
const int64_t kLargestSpecializedSize = 16;

// The variables bounding a loop (or a reduction's loop) nested inside a
// parallel loop.
class WindowBounds : public IRVisitor {
public:
  std::set<std::string> names;
  std::map<std::string, SourceRange> firstLoop; // of each name, where remarks point

protected:
  void visitFor(const For &node) override {
    if (parallelDepth_ > 0)
      addBounds(node.min, node.extent, node.source);
    parallelDepth_ += node.forKind == ForKind::Parallel;
    IRVisitor::visitFor(node);
    parallelDepth_ -= node.forKind == ForKind::Parallel;
  }
  void visitReduce(const Reduce &node) override {
    if (parallelDepth_ > 0)
      for (const Reduce::Loop &loop : node.loops)
        addBounds(loop.min, loop.extent, node.source);
    IRVisitor::visitReduce(node);
  }

private:
  void addBounds(const Expr &min, const Expr &extent, SourceRange source) {
    for (const Expr &bound : {min, extent})
      for (const std::string &name : freeVars(bound)) {
        names.insert(name);
        firstLoop.try_emplace(name, source);
      }
  }
  int parallelDepth_ = 0;
};

} // namespace

std::map<std::string, int64_t> sizesToSpecialize(const Function &function,
                                                 const std::map<std::string, int64_t> &sizes,
                                                 const PipelineOptions &options) {
  // The GPU pipeline's only (Pipeline.cpp): on the CPU a constant window
  // stays inside each thread, and cnn_conv_valid at K = 3 ran slower with it.
  if (options.target != PipelineTarget::Gpu || options.choices.skipped.contains("specialize_sizes"))
    return {};
  WindowBounds bounds;
  bounds.visit(function.body);
  std::map<std::string, int64_t> chosen;
  // With no value (explain without --set) there is nothing to decide, and
  // nothing to say.
  RemarkReporter remarks(options.remarks, "specialize_sizes");
  for (const ScalarParam &scalar : function.scalars) {
    auto value = sizes.find(scalar.name);
    if (!bounds.names.contains(scalar.name) || value == sizes.end() || value->second < 0)
      continue;
    SourceRange loop = bounds.firstLoop.at(scalar.name);
    if (value->second > kLargestSpecializedSize) {
      remarks.declined(loop, scalar.name + " = " + std::to_string(value->second) +
                                 " stays a run-time value: only sizes up to " +
                                 std::to_string(kLargestSpecializedSize) +
                                 " are compiled as constants");
      continue;
    }
    remarks.applied(loop, scalar.name + " = " + std::to_string(value->second) +
                              " is compiled as a constant: its loops may unroll, and boxes "
                              "spanning them have constant sizes");
    chosen.emplace(scalar.name, value->second);
  }
  return chosen;
}

Function specializeSizes(Function function, const std::map<std::string, int64_t> &values) {
  std::map<std::string, Expr> constants;
  for (const ScalarParam &scalar : function.scalars)
    if (auto value = values.find(scalar.name); value != values.end())
      constants.emplace(scalar.name, makeInt(scalar.type, value->second));
  if (!constants.empty())
    function.body = substitute(function.body, constants);
  // The arrays' shapes keep the names: each value is a size choice, a fact
  // for BoundsProof (F[o][c][u][v] with u below 3 is in range of F[..][K][K]).
  for (const auto &[name, value] : constants)
    function.sizeChoices.push_back({equal(makeVar(value->type, name), value), true});
  return function;
}

} // namespace loopc::passes
