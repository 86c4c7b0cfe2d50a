// Counting flops and bytes of a lowered kernel (see WorkCount.h).
#include "passes/analysis/WorkCount.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/Evaluate.h"

#include <functional>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;

namespace {

class Counter {
public:
  explicit Counter(std::map<std::string, int64_t> values) : values_(std::move(values)) {}

  WorkCount result;

  void count(const StmtNode &stmt, double trips) {
    switch (stmt.kind) {
    case StmtNode::Kind::For: {
      auto &loop = *stmt.as<ir::For>();
      std::optional<int64_t> min = evaluate(*loop.min);
      std::optional<int64_t> extent = evaluate(*loop.extent);
      if (!min || !extent) {
        result.approximate = true;
        return;
      }
      if (*extent <= 0)
        return;
      overIterations(loop.var, *min, *extent, boundsDependOn(*loop.body, loop.var),
                     [&](double times) { count(*loop.body, trips * times); });
      return;
    }
    case StmtNode::Kind::IfThenElse: {
      auto &branch = *stmt.as<IfThenElse>();
      result.flops += trips * flops(*branch.cond);
      if (std::optional<int64_t> taken = evaluate(*branch.cond)) {
        if (*taken)
          count(*branch.thenCase, trips);
        else if (branch.elseCase)
          count(*branch.elseCase, trips);
        return;
      }
      // Decided by data: both branches, an upper bound.
      result.approximate = true;
      count(*branch.thenCase, trips);
      if (branch.elseCase)
        count(*branch.elseCase, trips);
      return;
    }
    case StmtNode::Kind::LetStmt: {
      auto &let = *stmt.as<LetStmt>();
      result.flops += trips * flops(*let.value);
      std::optional<int64_t> value = evaluate(*let.value);
      if (value)
        withValue(let.var, *value, [&] { count(*let.body, trips); });
      else
        count(*let.body, trips);
      return;
    }
    case StmtNode::Kind::Store: {
      auto &store = *stmt.as<ir::Store>();
      result.flops += trips * flops(*store.value);
      return;
    }
    case StmtNode::Kind::AtomicUpdate: {
      auto &update = *stmt.as<ir::AtomicUpdate>();
      result.flops +=
          trips * (flops(*update.value) + combineFlops(update.op, update.buffer->element));
      return;
    }
    case StmtNode::Kind::Allocate:
      count(*stmt.as<ir::Allocate>()->body, trips);
      return;
    case StmtNode::Kind::Block:
      for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
        count(*child, trips);
      return;
    case StmtNode::Kind::Reduce:
      countReduce(*stmt.as<ir::Reduce>(), trips, 0);
      return;
    case StmtNode::Kind::Scan: {
      // Like a reduction over its loop: each element's value, then one combine.
      auto &scan = *stmt.as<ir::Scan>();
      std::optional<int64_t> min = evaluate(*scan.loop.min);
      std::optional<int64_t> extent = evaluate(*scan.loop.extent);
      if (!min || !extent) {
        result.approximate = true;
        return;
      }
      if (*extent <= 0)
        return;
      auto element = [&](double times) {
        if (scan.valueSetup)
          count(*scan.valueSetup, trips * times);
        result.flops +=
            trips * times * (flops(*scan.value) + combineFlops(scan.op, scan.target->element));
      };
      overIterations(scan.loop.var, *min, *extent,
                     scan.valueSetup && boundsDependOn(*scan.valueSetup, scan.loop.var), element);
      return;
    }
    default:
      return;
    }
  }

  // `expr` (an extent) from the bound sizes and parameters, if it can be.
  std::optional<int64_t> valueOf(const ExprNode &expr) const { return evaluate(expr); }

private:
  // Counts a loop's body over `extent` iterations of `var` from `min`
  // through `countBody(times)`: once at the middle value when no loop bound
  // inside depends on `var` (exact then), else once per value up to
  // kEnumeratedIterations (exact: a triangular nest's inner square is not
  // linear in the outer variable), beyond that at the middle, approximate.
  void overIterations(const std::string &var, int64_t min, int64_t extent, bool boundsDepend,
                      const std::function<void(double)> &countBody) {
    constexpr int64_t kEnumeratedIterations = 4096;
    if (!boundsDepend) {
      withValue(var, min + extent / 2, [&] { countBody(static_cast<double>(extent)); });
      return;
    }
    if (extent > kEnumeratedIterations) {
      result.approximate = true;
      withValue(var, min + extent / 2, [&] { countBody(static_cast<double>(extent)); });
      return;
    }
    for (int64_t value = min; value < min + extent; ++value)
      withValue(var, value, [&] { countBody(1); });
  }

  // Whether a loop bound inside `body` depends on `var` (through lets too).
  static bool boundsDependOn(const StmtNode &body, const std::string &var) {
    std::set<std::string> dependent = {var};
    std::function<bool(const ExprNode &)> uses = [&](const ExprNode &expr) {
      class Finder : public IRVisitor {
      public:
        explicit Finder(const std::set<std::string> &names) : names_(names) {}
        bool found = false;

      protected:
        void visitVar(const Var &node) override { found |= names_.contains(node.name); }

      private:
        const std::set<std::string> &names_;
      } finder(dependent);
      finder.visit(ir::Expr(ir::Expr(), &expr));
      return finder.found;
    };
    std::function<bool(const StmtNode &)> walk = [&](const StmtNode &stmt) -> bool {
      switch (stmt.kind) {
      case StmtNode::Kind::For: {
        auto &loop = *stmt.as<ir::For>();
        return uses(*loop.min) || uses(*loop.extent) || walk(*loop.body);
      }
      case StmtNode::Kind::IfThenElse: {
        auto &branch = *stmt.as<IfThenElse>();
        return uses(*branch.cond) || walk(*branch.thenCase) ||
               (branch.elseCase && walk(*branch.elseCase));
      }
      case StmtNode::Kind::LetStmt: {
        auto &let = *stmt.as<LetStmt>();
        if (uses(*let.value))
          dependent.insert(let.var);
        return walk(*let.body);
      }
      case StmtNode::Kind::Allocate:
        return walk(*stmt.as<ir::Allocate>()->body);
      case StmtNode::Kind::Block:
        for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
          if (walk(*child))
            return true;
        return false;
      case StmtNode::Kind::Reduce: {
        auto &reduce = *stmt.as<ir::Reduce>();
        for (const ir::Reduce::Loop &loop : reduce.loops)
          if (uses(*loop.min) || uses(*loop.extent))
            return true;
        return reduce.valueSetup && walk(*reduce.valueSetup);
      }
      case StmtNode::Kind::Scan: {
        auto &scan = *stmt.as<ir::Scan>();
        return uses(*scan.loop.min) || uses(*scan.loop.extent) ||
               (scan.valueSetup && walk(*scan.valueSetup));
      }
      default:
        return false;
      }
    };
    return walk(body);
  }

  // Whether the bounds of `reduce`'s loops inside loop `depth`, or a loop in
  // its value's setup, depend on `var`.
  static bool innerBoundsDependOn(const ir::Reduce &reduce, size_t depth, const std::string &var) {
    std::vector<ir::Reduce::Loop> inner(reduce.loops.begin() + depth + 1, reduce.loops.end());
    ir::Stmt nest = reduce.valueSetup ? reduce.valueSetup
                                      : std::make_shared<ir::Block>(std::vector<ir::Stmt>{});
    for (auto loop = inner.rbegin(); loop != inner.rend(); ++loop)
      nest =
          std::make_shared<ir::For>(loop->var, loop->min, loop->extent, ForKind::Serial, 0, nest);
    return boundsDependOn(*nest, var);
  }

  void countReduce(const ir::Reduce &reduce, double trips, size_t depth) {
    if (depth < reduce.loops.size()) {
      const ir::Reduce::Loop &loop = reduce.loops[depth];
      std::optional<int64_t> min = evaluate(*loop.min);
      std::optional<int64_t> extent = evaluate(*loop.extent);
      if (!min || !extent) {
        result.approximate = true;
        return;
      }
      if (*extent > 0)
        overIterations(loop.var, *min, *extent, innerBoundsDependOn(reduce, depth, loop.var),
                       [&](double times) { countReduce(reduce, trips * times, depth + 1); });
      return;
    }
    if (reduce.valueSetup)
      count(*reduce.valueSetup, trips);
    result.flops +=
        trips * (flops(*reduce.value) + combineFlops(reduce.op, reduce.accumulator->element));
  }

  // The flops of one application of a reduction operator.
  static double combineFlops(const ReduceOperator &op, ScalarType type) {
    if (op.kind == ReduceOperator::Kind::User)
      return op.combine ? flops(*op.combine) : 0;
    return isFloat(type) ? 1 : 0;
  }

  void withValue(const std::string &name, int64_t value, const std::function<void()> &body) {
    auto found = values_.find(name);
    std::optional<int64_t> saved =
        found == values_.end() ? std::nullopt : std::optional<int64_t>(found->second);
    values_[name] = value;
    body();
    if (saved)
      values_[name] = *saved;
    else
      values_.erase(name);
  }

  static double flops(const ExprNode &expr) {
    switch (expr.kind) {
    case ExprNode::Kind::Load: {
      double total = 0;
      for (const ir::Expr &index : expr.as<ir::Load>()->indices)
        total += flops(*index);
      return total;
    }
    case ExprNode::Kind::Unary:
      return flops(*expr.as<Unary>()->operand);
    case ExprNode::Kind::Binary: {
      auto &binary = *expr.as<Binary>();
      bool counted = isFloat(binary.lhs->type) && !isComparison(binary.op) &&
                     binary.op != BinaryOpKind::And && binary.op != BinaryOpKind::Or;
      return (counted ? 1 : 0) + flops(*binary.lhs) + flops(*binary.rhs);
    }
    case ExprNode::Kind::Select: {
      auto &select = *expr.as<ir::Select>();
      return flops(*select.cond) + flops(*select.thenValue) + flops(*select.elseValue);
    }
    case ExprNode::Kind::Cast:
      return flops(*expr.as<Cast>()->operand);
    case ExprNode::Kind::Call: {
      auto &call = *expr.as<ir::Call>();
      double total = isFloat(call.type) ? (call.builtin == Builtin::Fma ? 2 : 1) : 0;
      for (const ir::Expr &arg : call.args)
        total += flops(*arg);
      return total;
    }
    default:
      return 0;
    }
  }

  std::optional<int64_t> evaluate(const ExprNode &expr) const {
    return evaluateInteger(expr, [&](const std::string &name) -> std::optional<int64_t> {
      auto found = values_.find(name);
      return found == values_.end() ? std::nullopt : std::optional<int64_t>(found->second);
    });
  }

  std::map<std::string, int64_t> values_;
};

// Buffers some expression in `stmt` loads from.
void collectReads(const ExprNode &expr, std::set<const BufferInfo *> &reads);

void collectReads(const StmtNode &stmt, std::set<const BufferInfo *> &reads) {
  switch (stmt.kind) {
  case StmtNode::Kind::For: {
    auto &loop = *stmt.as<ir::For>();
    collectReads(*loop.extent, reads);
    collectReads(*loop.body, reads);
    return;
  }
  case StmtNode::Kind::IfThenElse: {
    auto &branch = *stmt.as<IfThenElse>();
    collectReads(*branch.cond, reads);
    collectReads(*branch.thenCase, reads);
    if (branch.elseCase)
      collectReads(*branch.elseCase, reads);
    return;
  }
  case StmtNode::Kind::LetStmt:
    collectReads(*stmt.as<LetStmt>()->value, reads);
    collectReads(*stmt.as<LetStmt>()->body, reads);
    return;
  case StmtNode::Kind::Store:
    collectReads(*stmt.as<ir::Store>()->value, reads);
    for (const ir::Expr &index : stmt.as<ir::Store>()->indices)
      collectReads(*index, reads);
    return;
  case StmtNode::Kind::AtomicUpdate: {
    auto &update = *stmt.as<ir::AtomicUpdate>();
    reads.insert(update.buffer.get()); // it reads the element it combines into
    collectReads(*update.value, reads);
    for (const ir::Expr &index : update.indices)
      collectReads(*index, reads);
    return;
  }
  case StmtNode::Kind::Allocate:
    collectReads(*stmt.as<ir::Allocate>()->body, reads);
    return;
  case StmtNode::Kind::Block:
    for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
      collectReads(*child, reads);
    return;
  case StmtNode::Kind::Reduce: {
    auto &reduce = *stmt.as<ir::Reduce>();
    collectReads(*reduce.value, reads);
    if (reduce.valueSetup)
      collectReads(*reduce.valueSetup, reads);
    return;
  }
  case StmtNode::Kind::Scan: {
    auto &scan = *stmt.as<ir::Scan>();
    collectReads(*scan.value, reads);
    if (scan.valueSetup)
      collectReads(*scan.valueSetup, reads);
    return;
  }
  default:
    return;
  }
}

void collectReads(const ExprNode &expr, std::set<const BufferInfo *> &reads) {
  switch (expr.kind) {
  case ExprNode::Kind::Load:
    reads.insert(expr.as<ir::Load>()->buffer.get());
    for (const ir::Expr &index : expr.as<ir::Load>()->indices)
      collectReads(*index, reads);
    return;
  case ExprNode::Kind::Unary:
    return collectReads(*expr.as<Unary>()->operand, reads);
  case ExprNode::Kind::Binary:
    collectReads(*expr.as<Binary>()->lhs, reads);
    return collectReads(*expr.as<Binary>()->rhs, reads);
  case ExprNode::Kind::Select:
    collectReads(*expr.as<ir::Select>()->cond, reads);
    collectReads(*expr.as<ir::Select>()->thenValue, reads);
    return collectReads(*expr.as<ir::Select>()->elseValue, reads);
  case ExprNode::Kind::Cast:
    return collectReads(*expr.as<Cast>()->operand, reads);
  case ExprNode::Kind::Call:
    for (const ir::Expr &arg : expr.as<ir::Call>()->args)
      collectReads(*arg, reads);
    return;
  default:
    return;
  }
}

} // namespace

WorkCount countWork(const ir::Function &function, const std::map<std::string, int64_t> &values) {
  Counter counter(values);
  if (function.body)
    counter.count(*function.body, 1);
  std::set<const BufferInfo *> reads;
  if (function.body)
    collectReads(*function.body, reads);
  for (const ir::Buffer &buffer : function.buffers) {
    double elements = 1;
    for (const ir::Expr &extent : buffer->shape) {
      if (std::optional<int64_t> value = counter.valueOf(*extent))
        elements *= static_cast<double>(*value);
      else
        counter.result.approximate = true;
    }
    double bytes = elements * static_cast<double>(scalarSize(buffer->element));
    counter.result.bytes +=
        (reads.contains(buffer.get()) ? bytes : 0) + (buffer->isWritten ? bytes : 0);
  }
  return counter.result;
}

} // namespace loopc::passes
