// Proofs that array indices are in range (see BoundsProof.h).
#include "passes/analysis/BoundsProof.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/analysis/IndexRange.h"

#include <climits>
#include <cstdlib>
#include <set>
#include <string>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr;
using ir::Stmt;

bool ProvenAccesses::proven(const void *access, size_t dim) const {
  auto found = dims_.find(access);
  return found != dims_.end() && dim < found->second.size() && found->second[dim];
}

namespace {

// Steps one proof may take, and the largest coefficient it may reach:
// enough for the nests passes make, small enough to cost nothing.
constexpr int kProofSteps = 256;
constexpr int64_t kLargestCoefficient = int64_t(1) << 40;
constexpr int64_t kLargestFactor = int64_t(1) << 20;

LinearForm constantForm(int64_t value) {
  LinearForm form;
  form.constant = value;
  return form;
}

LinearForm atomForm(const Expr &atom) {
  LinearForm form;
  form.terms.emplace(toString(atom), std::make_pair(atom, int64_t(1)));
  return form;
}

// Collects the facts around each access and proves its indices.
class Prover : public IRVisitor {
public:
  Prover(const Function &function, ProvenAccesses &proven) : proven_(proven) {
    auto addSizes = [&](const std::vector<Buffer> &buffers) {
      // The extents of the program's array parameters, which the engines
      // and generated wrappers check are not negative.
      for (const Buffer &buffer : buffers)
        for (const Expr &extent : buffer->isParameter ? buffer->shape : std::vector<Expr>{})
          if (auto *var = extent->as<Var>())
            sizes_.insert(var->name);
    };
    addSizes(function.buffers);
    for (const KernelFunc &kernel : function.kernels)
      addSizes(kernel.buffers);
  }

protected:
  void visitFor(const For &loop) override {
    visit(loop.min);
    visit(loop.extent);
    std::optional<LinearForm> min = form(loop.min), extent = form(loop.extent);
    depth_[loop.var] = static_cast<int>(depth_.size()) + 1;
    size_t facts = facts_.size();
    LinearForm var = atomForm(makeVar(loop.min->type, loop.var));
    if (min) {
      facts_.push_back(var.plus(*min, -1)); // var - min >= 0
      if (extent)                           // min + extent - 1 - var >= 0
        facts_.push_back(min->plus(*extent, 1).plus(var, -1).plus(constantForm(1), -1));
    }
    visit(loop.body);
    facts_.resize(facts);
    depth_.erase(loop.var);
  }

  void visitLetStmt(const LetStmt &let) override {
    visit(let.value);
    std::optional<LinearForm> value = form(let.value);
    if (value)
      lets_[let.var] = *value;
    visit(let.body);
    lets_.erase(let.var);
  }

  void visitIfThenElse(const IfThenElse &branch) override {
    visit(branch.cond);
    size_t facts = facts_.size();
    addConditionFacts(branch.cond, /*holds=*/true);
    visit(branch.thenCase);
    facts_.resize(facts);
    if (branch.elseCase) {
      addConditionFacts(branch.cond, /*holds=*/false);
      visit(branch.elseCase);
      facts_.resize(facts);
    }
  }

  void visitLoad(const Load &load) override {
    IRVisitor::visitLoad(load);
    prove(&load, *load.buffer, load.indices);
  }
  void visitStore(const Store &store) override {
    IRVisitor::visitStore(store);
    prove(&store, *store.buffer, store.indices);
  }
  void visitAtomicUpdate(const AtomicUpdate &update) override {
    IRVisitor::visitAtomicUpdate(update);
    prove(&update, *update.buffer, update.indices);
  }

private:
  void prove(const void *access, const BufferInfo &buffer, const std::vector<Expr> &indices) {
    std::vector<bool> dims(indices.size(), false);
    for (size_t dim = 0; dim < indices.size() && dim < buffer.shape.size(); ++dim) {
      std::optional<LinearForm> extent = form(buffer.shape[dim]);
      dims[dim] = extent && atLeastZero(indices[dim]) && belowExtent(indices[dim], *extent);
    }
    proven_.record(access, std::move(dims));
  }

  bool atLeastZero(const Expr &index) {
    std::optional<LinearForm> linear = form(index);
    int steps = kProofSteps;
    return linear && nonNegative(*linear, steps);
  }

  bool belowExtent(const Expr &index, const LinearForm &extent) {
    std::optional<LinearForm> linear = form(index);
    int steps = kProofSteps;
    return linear && nonNegative(extent.plus(*linear, -1).plus(constantForm(1), -1), steps);
  }

  // The linear form of an integer expression; none for other types. Lets
  // are substituted; i64 sums, differences and products by a constant are
  // taken apart; anything else is an atom.
  std::optional<LinearForm> form(const Expr &expr) {
    std::optional<LinearForm> result = unboundedForm(expr);
    if (result && tooLarge(*result))
      return opaque(expr);
    return result;
  }

  // `expr` as an atom, unless it reads memory: the same load may give
  // another value further on (the array written between), so a fact about
  // it would not hold at the access. A let's value is fixed where it is
  // bound, so a let of a load is an atom, by its name.
  static std::optional<LinearForm> opaque(const Expr &expr) {
    struct Reads : IRVisitor {
      bool found = false;
      void visitLoad(const Load &) override { found = true; }
    } reads;
    reads.visit(expr);
    if (reads.found)
      return std::nullopt;
    return atomForm(expr);
  }

  std::optional<LinearForm> unboundedForm(const Expr &expr) {
    if (!expr || !isInteger(expr->type))
      return std::nullopt;
    if (auto *value = expr->as<IntImm>())
      return constantForm(value->value);
    if (auto *var = expr->as<Var>()) {
      if (auto let = lets_.find(var->name); let != lets_.end())
        return let->second;
      return atomForm(expr);
    }
    if (auto *cast = expr->as<Cast>();
        cast && expr->type == ScalarType::I64 && isInteger(cast->operand->type))
      return form(cast->operand); // widening keeps the value
    if (auto *binary = expr->as<Binary>(); binary && expr->type == ScalarType::I64) {
      std::optional<LinearForm> lhs = form(binary->lhs), rhs = form(binary->rhs);
      if (lhs && rhs) {
        switch (binary->op) {
        case BinaryOpKind::Add:
          return lhs->plus(*rhs, 1);
        case BinaryOpKind::Sub:
          return lhs->plus(*rhs, -1);
        case BinaryOpKind::Mul:
          // Factors below 2^20 of forms below 2^40: no overflow.
          if (rhs->terms.empty() && std::abs(rhs->constant) < kLargestFactor)
            return lhs->scaled(rhs->constant);
          if (lhs->terms.empty() && std::abs(lhs->constant) < kLargestFactor)
            return rhs->scaled(lhs->constant);
          break;
        case BinaryOpKind::Min:
        case BinaryOpKind::Max:
          defineMinMax(expr, binary->op == BinaryOpKind::Min, *lhs, *rhs);
          break;
        default:
          break;
        }
      }
    }
    return opaque(expr);
  }

  // Remembers what a min or max atom stands for, so a proof can take its
  // cases (nonNegative).
  void defineMinMax(const Expr &atom, bool isMin, const LinearForm &a, const LinearForm &b) {
    clamps_.try_emplace(toString(atom), Clamp{isMin, a, b});
  }

  // The facts `cond` gives where it holds (or where it does not).
  void addConditionFacts(const Expr &cond, bool holds) {
    if (auto *unary = cond->as<Unary>(); unary && unary->op == UnaryOpKind::Not)
      return addConditionFacts(unary->operand, !holds);
    // `a && b` lowered as select(a, b, false) (b is not evaluated when a
    // fails), `a || b` as select(a, true, b).
    if (auto *select = cond->as<Select>()) {
      auto *constant = (holds ? select->elseValue : select->thenValue)->as<BoolImm>();
      if (constant && constant->value == !holds) {
        addConditionFacts(select->cond, holds);
        addConditionFacts(holds ? select->thenValue : select->elseValue, holds);
      }
      return;
    }
    auto *binary = cond->as<Binary>();
    if (!binary)
      return;
    if (binary->op == (holds ? BinaryOpKind::And : BinaryOpKind::Or)) {
      addConditionFacts(binary->lhs, holds); // both sides hold (or both fail)
      addConditionFacts(binary->rhs, holds);
      return;
    }
    std::optional<LinearForm> lhs = form(binary->lhs), rhs = form(binary->rhs);
    if (!lhs || !rhs)
      return;
    LinearForm difference = lhs->plus(*rhs, -1); // lhs - rhs
    LinearForm one = constantForm(1);
    BinaryOpKind op = binary->op;
    if (!holds) {
      switch (op) {
      case BinaryOpKind::Lt:
        op = BinaryOpKind::Ge;
        break;
      case BinaryOpKind::Le:
        op = BinaryOpKind::Gt;
        break;
      case BinaryOpKind::Gt:
        op = BinaryOpKind::Le;
        break;
      case BinaryOpKind::Ge:
        op = BinaryOpKind::Lt;
        break;
      case BinaryOpKind::Ne:
        op = BinaryOpKind::Eq;
        break;
      default:
        return;
      }
    }
    switch (op) {
    case BinaryOpKind::Lt: // rhs - lhs - 1 >= 0
      facts_.push_back(difference.scaled(-1).plus(one, -1));
      break;
    case BinaryOpKind::Le:
      facts_.push_back(difference.scaled(-1));
      break;
    case BinaryOpKind::Gt:
      facts_.push_back(difference.plus(one, -1));
      break;
    case BinaryOpKind::Ge:
      facts_.push_back(difference);
      break;
    case BinaryOpKind::Eq:
      facts_.push_back(difference);
      facts_.push_back(difference.scaled(-1));
      break;
    default:
      break;
    }
  }

  // When eliminating, inner loop variables go first (their facts mention
  // outer ones), atoms with definitions before any loop variable, sizes
  // last (their facts are what is left to check).
  int eliminationOrder(const std::string &key) const {
    if (auto loop = depth_.find(key); loop != depth_.end())
      return loop->second;
    if (sizes_.contains(key))
      return -1;
    return INT_MAX;
  }

  // Whether `r >= 0` follows from the facts, within `steps`.
  bool nonNegative(const LinearForm &r, int &steps) const {
    if (--steps < 0)
      return false;
    // Done: a constant and sizes, all non-negative.
    bool done = r.constant >= 0;
    for (const auto &[key, term] : r.terms)
      done = done && term.second > 0 && sizes_.contains(key);
    if (done)
      return true;
    // The term to cancel: the first in elimination order.
    const std::pair<const std::string, std::pair<Expr, int64_t>> *pick = nullptr;
    // (A size with a positive coefficient is cancelled only when nothing
    // else is left and the constant is negative: `M - 1 >= 0` inside
    // `i < M` with i >= 0.)
    for (const auto &entry : r.terms)
      if (!pick || eliminationOrder(entry.first) > eliminationOrder(pick->first))
        pick = &entry;
    if (!pick)
      return false;
    int64_t a = pick->second.second;
    if (auto clamp = clamps_.find(pick->first); clamp != clamps_.end()) {
      // m = min(x, y) is x or y: r >= 0 for both values when r grows with
      // m (it is at its least at the smaller one), else for either (m is
      // at most each); the other way around for a max.
      LinearForm withoutAtom = r;
      withoutAtom.terms.erase(pick->first);
      if (std::abs(a) >= kLargestFactor)
        return false;
      LinearForm first = withoutAtom.plus(clamp->second.first.scaled(a), 1);
      LinearForm second = withoutAtom.plus(clamp->second.second.scaled(a), 1);
      if (tooLarge(first) || tooLarge(second))
        return false;
      if ((a > 0) == clamp->second.isMin)
        return nonNegative(first, steps) && nonNegative(second, steps);
      return nonNegative(first, steps) || nonNegative(second, steps);
    }
    for (const LinearForm &fact : facts_) {
      auto term = fact.terms.find(pick->first);
      if (term == fact.terms.end() || (term->second.second > 0) != (a > 0))
        continue;
      int64_t c = term->second.second;
      if (std::abs(c) >= kLargestFactor || std::abs(a) >= kLargestFactor)
        continue;
      // |c| r - |a| fact: the term cancels, and r >= 0 follows from it.
      LinearForm reduced = r.scaled(std::abs(c)).plus(fact.scaled(std::abs(a)), -1);
      if (tooLarge(reduced))
        continue;
      if (nonNegative(reduced, steps))
        return true;
      if (steps < 0)
        return false;
    }
    return false;
  }

  static bool tooLarge(const LinearForm &form) {
    if (std::abs(form.constant) >= kLargestCoefficient)
      return true;
    for (const auto &[key, term] : form.terms)
      if (std::abs(term.second) >= kLargestCoefficient)
        return true;
    return false;
  }

  ProvenAccesses &proven_;
  std::set<std::string> sizes_;
  std::map<std::string, int> depth_;       // enclosing loop variables
  std::map<std::string, LinearForm> lets_; // enclosing lets with linear values
  std::vector<LinearForm> facts_;          // each >= 0 here
  struct Clamp {
    bool isMin;
    LinearForm first, second;
  };
  std::map<std::string, Clamp> clamps_; // min and max atoms
};

} // namespace

ProvenAccesses proveAccessesInBounds(const Function &function) {
  // One prover per body: each kernel's names are its own.
  ProvenAccesses proven;
  auto proveBody = [&](const Stmt &body) {
    Prover prover(function, proven);
    prover.visit(body);
  };
  proveBody(function.body);
  for (const KernelFunc &kernel : function.kernels)
    proveBody(kernel.body);
  return proven;
}

} // namespace loopc::passes
