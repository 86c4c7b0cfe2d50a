// The host code of a program at the sizes of a run (see HostWalk.h).
#include "perf/HostWalk.h"

#include "passes/analysis/Evaluate.h"

#include <algorithm>

namespace loopc::perf {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

void HostWalk::run() {
  if (function_.body)
    walk(*function_.body, 1);
}

std::optional<int64_t> HostWalk::evaluate(const ExprNode &expr) const {
  return passes::evaluateInteger(expr, [&](const std::string &name) {
    auto found = values_.find(name);
    return found == values_.end() ? std::nullopt : std::optional<int64_t>(found->second);
  });
}

void HostWalk::walk(const StmtNode &stmt, double times) {
  switch (stmt.kind) {
  case StmtNode::Kind::Block:
    for (const Stmt &child : stmt.as<ir::Block>()->stmts)
      walk(*child, times);
    return;
  case StmtNode::Kind::LetStmt: {
    auto &let = *stmt.as<LetStmt>();
    lets_.emplace_back(let.var, let.value);
    withValue(let.var, evaluate(*let.value), [&] { walk(*let.body, times); });
    lets_.pop_back();
    return;
  }
  case StmtNode::Kind::For: {
    auto &loop = *stmt.as<ir::For>();
    auto min = evaluate(*loop.min);
    auto extent = evaluate(*loop.extent);
    loops_.push_back(&loop);
    if (!min || !extent) {
      approximate_ = true;
      withValue(loop.var, std::nullopt, [&] { walk(*loop.body, times); });
    } else if (*extent > 0) {
      // Every iteration of a short loop; a long one at a few points of its
      // range (its launches may shrink with it, as an LU's do).
      constexpr int64_t kEnumerated = 64, kSamples = 8;
      if (*extent <= kEnumerated) {
        for (int64_t i = 0; i < *extent; ++i)
          withValue(loop.var, *min + i, [&] { walk(*loop.body, times); });
      } else {
        for (int64_t sample = 0; sample < kSamples; ++sample)
          withValue(loop.var, *min + (2 * sample + 1) * *extent / (2 * kSamples),
                    [&] { walk(*loop.body, times * static_cast<double>(*extent) / kSamples); });
      }
    }
    loops_.pop_back();
    return;
  }
  case StmtNode::Kind::IfThenElse: {
    auto &branch = *stmt.as<IfThenElse>();
    auto cond = evaluate(*branch.cond);
    if (!cond)
      approximate_ = true;
    if (!cond || *cond)
      walk(*branch.thenCase, times);
    else if (branch.elseCase)
      walk(*branch.elseCase, times);
    return;
  }
  case StmtNode::Kind::Allocate: {
    auto &allocate = *stmt.as<ir::Allocate>();
    double bytes = static_cast<double>(scalarSize(allocate.buffer->element));
    for (const Expr &extent : allocate.buffer->shape)
      bytes *= static_cast<double>(std::max<int64_t>(evaluate(*extent).value_or(1), 0));
    allocated(bytes, times);
    walk(*allocate.body, times);
    return;
  }
  case StmtNode::Kind::Store:
    stored(*stmt.as<Store>(), times);
    return;
  case StmtNode::Kind::Launch:
    launch(*stmt.as<ir::Launch>(), times);
    return;
  default:
    return;
  }
}

void HostWalk::launch(const ir::Launch &launch, double times) {
  const KernelFunc *kernel = nullptr;
  for (const KernelFunc &candidate : function_.kernels)
    if (candidate.name == launch.kernel)
      kernel = &candidate;
  if (!kernel)
    return;
  LaunchShape shape;
  for (int dim = 0; dim < 3; ++dim) {
    auto grid = evaluate(*launch.grid[dim]);
    auto block = evaluate(*launch.block[dim]);
    if (!grid || !block)
      approximate_ = true;
    shape.grid[dim] = std::max<int64_t>(grid.value_or(1), 0);
    shape.block[dim] = std::max<int64_t>(block.value_or(1), 1);
  }
  std::map<std::string, int64_t> kernelValues = values_;
  for (size_t i = 0; i < launch.scalars.size() && i < kernel->scalars.size(); ++i)
    if (auto value = evaluate(*launch.scalars[i]))
      kernelValues[kernel->scalars[i].name] = *value;
  // One prediction per kernel and geometry; a launch repeated with other
  // values (a shrinking grid) is predicted again and counted apart.
  std::string key = launch.kernel;
  for (int dim = 0; dim < 3; ++dim)
    key += " " + std::to_string(shape.grid[dim]) + "x" + std::to_string(shape.block[dim]);
  for (const ScalarParam &scalar : kernel->scalars)
    if (auto found = kernelValues.find(scalar.name); found != kernelValues.end())
      key += " " + scalar.name + "=" + std::to_string(found->second);
  launched(LaunchSite{*kernel, shape, std::move(kernelValues), std::move(key)}, times);
}

void HostWalk::withValue(const std::string &name, std::optional<int64_t> value,
                         const std::function<void()> &body) {
  auto found = values_.find(name);
  std::optional<int64_t> saved =
      found == values_.end() ? std::nullopt : std::optional<int64_t>(found->second);
  if (value)
    values_[name] = *value;
  else
    values_.erase(name);
  body();
  if (saved)
    values_[name] = *saved;
  else
    values_.erase(name);
}

} // namespace loopc::perf
