// Proofs that array indices are in range (see BoundsProof.h).
#include "passes/analysis/BoundsProof.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/analysis/IndexRange.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr;
using ir::Stmt;

bool ProvenAccesses::proven(const Stmt &body, const void *access, size_t dim) const {
  auto found = dims_.find({body.get(), access});
  return found != dims_.end() && dim < found->second.size() && found->second[dim];
}

void ProvenAccesses::record(const Stmt &body, const void *access, const std::vector<bool> &dims) {
  auto [recorded, first] = dims_.try_emplace({body.get(), access}, dims);
  if (!first)
    for (size_t dim = 0; dim < dims.size() && dim < recorded->second.size(); ++dim)
      recorded->second[dim] = recorded->second[dim] && dims[dim];
}

namespace {

// Whether the accesses a visit meets are all proven.
struct ProvenCheck : IRVisitor {
  const ProvenAccesses &proven;
  const Stmt &body;
  bool all = true;
  ProvenCheck(const ProvenAccesses &proven, const Stmt &body) : proven(proven), body(body) {}
  void check(const void *access, size_t dims) {
    for (size_t dim = 0; dim < dims; ++dim)
      all = all && proven.proven(body, access, dim);
  }
  void visitLoad(const Load &load) override {
    IRVisitor::visitLoad(load);
    check(&load, load.indices.size());
  }
  void visitStore(const Store &store) override {
    IRVisitor::visitStore(store);
    check(&store, store.indices.size());
  }
  void visitAtomicUpdate(const AtomicUpdate &update) override {
    IRVisitor::visitAtomicUpdate(update);
    check(&update, update.indices.size());
  }
  // An array element a redomap or scan writes: its store is made later.
  void visitReduce(const Reduce &reduce) override {
    IRVisitor::visitReduce(reduce);
    all = all && reduce.indices.empty();
  }
  void visitScan(const Scan &scan) override {
    IRVisitor::visitScan(scan);
    all = all && scan.indices.empty();
  }
};

} // namespace

bool ProvenAccesses::allProvenIn(const Stmt &body, const Stmt &region) const {
  ProvenCheck accesses(*this, body);
  accesses.visit(region);
  return accesses.all;
}

bool ProvenAccesses::allProvenIn(const Stmt &body, const Expr &region) const {
  ProvenCheck accesses(*this, body);
  accesses.visit(region);
  return accesses.all;
}

ReorderableAccesses::ReorderableAccesses(const Function &function) : body_(function.body) {
  if (function.boundsChecked)
    proven_ = proveAccessesInBounds(function);
}

namespace {

// Steps one proof may take, and the largest coefficient it may reach:
// enough for the nests passes make, small enough to cost nothing.
constexpr int kProofSteps = 4096;
// The depths of the searches, one after the other (`proves`).
constexpr int kProofDepths[] = {4, 8, 16, 64};
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

struct Clamp {
  bool isMin;
  LinearForm first, second;
};
struct Quotient {
  LinearForm dividend;
  int64_t divisor;
};
// An atom `first op second` (op a product, a quotient or a remainder).
struct Operands {
  BinaryOpKind op;
  LinearForm first, second;
  Expr atom; // the expression, for a term of it
};

// What the host code knows where it launches a kernel (Prover::visitLaunch).
struct LaunchContext {
  std::vector<LinearForm> facts; // each >= 0
  std::map<std::string, Clamp> clamps;
  std::map<std::string, Quotient> quotients;
  std::map<std::string, Operands> signedByOperands;
};

// Collects the facts around each access and proves its indices.
class Prover : public IRVisitor {
public:
  Prover(const Function &function, const Stmt &body, ProvenAccesses &proven)
      : proven_(proven), uncheckedRegions_(function.uncheckedRegions), body_(body) {
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
    // The code serves only runs whose sizes decide these as they came out.
    for (const Function::SizeChoice &choice : function.sizeChoices) {
      addConditionFacts(choice.condition, choice.holds);
      // A size compiled as its value (specialize_sizes) is that constant
      // inside products too: an extent `NH * HD` with NH = 16 is the
      // linear 16 * HD that the loops, rewritten with the value, bound.
      const auto *equal = choice.condition->as<Binary>();
      if (choice.holds && equal && equal->op == BinaryOpKind::Eq)
        if (const auto *name = equal->lhs->as<Var>())
          if (const auto *value = equal->rhs->as<IntImm>())
            fixedSizes_[name->name] = value->value;
    }
    for (const KernelFunc &kernel : function.kernels)
      kernels_[kernel.name] = &kernel;
  }

  // What holds at the launches of a kernel, about its scalars (`launches`,
  // filled while visiting the host code), taken as facts for its body.
  void assumeLaunchContext(const LaunchContext &context) {
    for (const LinearForm &fact : context.facts)
      addFact(fact);
    clamps_.insert(context.clamps.begin(), context.clamps.end());
    quotients_.insert(context.quotients.begin(), context.quotients.end());
    signedByOperands_.insert(context.signedByOperands.begin(), context.signedByOperands.end());
  }
  std::map<std::string, std::vector<LaunchContext>> launches;

protected:
  void visitFor(const For &loop) override {
    visit(loop.min);
    visit(loop.extent);
    FactsMark facts = mark();
    enterLoop(loop.var, loop.min, loop.extent);
    visit(loop.body);
    restore(facts);
    depth_.erase(loop.var);
  }

  // A redomap's or scan's loops, before lower_reductions makes them Fors.
  void visitReduce(const Reduce &reduce) override {
    for (const Expr &index : reduce.indices)
      visit(index);
    visit(reduce.neutral);
    FactsMark facts = mark();
    for (const Reduce::Loop &loop : reduce.loops) {
      visit(loop.min);
      visit(loop.extent);
      enterLoop(loop.var, loop.min, loop.extent);
    }
    visit(reduce.valueSetup);
    visit(reduce.value);
    restore(facts);
    for (const Reduce::Loop &loop : reduce.loops)
      depth_.erase(loop.var);
  }
  void visitScan(const Scan &scan) override {
    visit(scan.neutral);
    visit(scan.loop.min);
    visit(scan.loop.extent);
    FactsMark facts = mark();
    enterLoop(scan.loop.var, scan.loop.min, scan.loop.extent);
    visit(scan.valueSetup);
    for (const Expr &index : scan.indices)
      visit(index);
    visit(scan.value);
    restore(facts);
    depth_.erase(scan.loop.var);
  }

  // The facts of a loop over `var` in [min, min + extent): the caller drops
  // them (and the variable's depth) when it leaves the loop.
  void enterLoop(const std::string &var, const Expr &min, const Expr &extent) {
    std::optional<LinearForm> first = form(min), count = form(runningExtent(extent));
    depth_[var] = static_cast<int>(depth_.size()) + 1;
    LinearForm value = atomForm(makeVar(min->type, var));
    if (first) {
      addFact(value.plus(*first, -1)); // var - min >= 0
      if (count)                       // min + extent - 1 - var >= 0
        addFact(first->plus(*count, 1).plus(value, -1).plus(constantForm(1), -1));
    }
  }

  // Where the facts stand, to go back to when leaving a scope.
  struct FactsMark {
    size_t linear, floats;
    uint64_t version;
  };
  FactsMark mark() const { return {facts_.size(), floatFacts_.size(), factsVersion_}; }
  void restore(FactsMark mark) {
    facts_.resize(mark.linear);
    floatFacts_.resize(mark.floats);
    factsVersion_ = mark.version; // the facts are again those it had
  }

  // A fact from here on, until the scope's restore(): the facts are new.
  void addFact(LinearForm fact) {
    facts_.push_back(std::move(fact));
    factsChanged();
  }
  void factsChanged() { factsVersion_ = ++lastFactsVersion_; }

  // A float comparison that holds (`holds`: else it fails, which says
  // nothing with NaNs about): `a >= b` or `a > b` as (a, b), in terms the
  // code cannot change between the test and a use (they read no array the
  // function writes).
  void addFloatFact(const Binary &comparison, bool holds) {
    if (!holds || !unchanging(comparison.lhs) || !unchanging(comparison.rhs))
      return;
    switch (comparison.op) {
    case BinaryOpKind::Ge:
    case BinaryOpKind::Gt:
      floatFacts_.emplace_back(toString(comparison.lhs), toString(comparison.rhs));
      factsChanged();
      break;
    case BinaryOpKind::Le:
    case BinaryOpKind::Lt:
      floatFacts_.emplace_back(toString(comparison.rhs), toString(comparison.lhs));
      factsChanged();
      break;
    default:
      break;
    }
  }

  // Whether `expr` reads no array the function writes.
  static bool unchanging(const Expr &expr) {
    struct Reads : IRVisitor {
      bool written = false;
      void visitLoad(const Load &load) override {
        written = written || load.buffer->isWritten;
        IRVisitor::visitLoad(load);
      }
    } reads;
    reads.visit(expr);
    return !reads.written;
  }

  // Whether `a >= b` (printed) follows from the float facts, directly or
  // through one term between (`hi > x >= lo`).
  bool floatAtLeast(const std::string &a, const std::string &b) const {
    for (const auto &[greater, lesser] : floatFacts_)
      if (greater == a && (lesser == b || std::ranges::any_of(floatFacts_, [&](const auto &next) {
                             return next.first == lesser && next.second == b;
                           })))
        return true;
    return false;
  }

  // Whether the float `expr` is at least 0 or NaN (IEEE: a - b for a >= b,
  // sums, products and quotients of such values, and conversions of
  // integers at least 0).
  bool floatNotNegative(const Expr &expr) const {
    if (auto *value = expr->as<FloatImm>())
      return value->value >= 0;
    // A comparison with a constant at least 0 (`x[i] >= 0.0`).
    std::string printed = toString(expr);
    for (const auto &[greater, lesser] : floatFacts_)
      if (greater == printed && !lesser.empty() &&
          std::isdigit(static_cast<unsigned char>(lesser[0])) &&
          lesser.find_first_not_of("0123456789.e+") == std::string::npos)
        return true;
    if (auto *var = expr->as<Var>()) {
      auto let = floatLets_.find(var->name);
      return let != floatLets_.end() && floatNotNegative(let->second);
    }
    if (auto *cast = expr->as<Cast>(); cast && isInteger(cast->operand->type)) {
      std::optional<LinearForm> value = const_cast<Prover *>(this)->form(cast->operand);
      // A search of its own, inside the one that asks.
      int depth = depthLeft_;
      bool holds = value && proves(*value);
      depthLeft_ = depth;
      return holds;
    }
    auto *binary = expr->as<Binary>();
    if (!binary)
      return false;
    switch (binary->op) {
    case BinaryOpKind::Add:
    case BinaryOpKind::Mul:
    case BinaryOpKind::Div:
      return floatNotNegative(binary->lhs) && floatNotNegative(binary->rhs);
    case BinaryOpKind::Sub:
      return floatAtLeast(toString(binary->lhs), toString(binary->rhs));
    default:
      return false;
    }
  }

  // A loop's extent as its body sees it: there it is at least 1, so
  // `max(e, c)` with a constant c <= 0 (a lowering's guard against negative
  // trip counts) is e, also as an operand of a min, and as the clamped
  // count of a strided loop's `(count + r) / c` (below).
  Expr runningExtent(const Expr &extent) {
    if (Expr strided = runningStridedCount(extent))
      return strided;
    auto *clamp = extent->as<Binary>();
    // min(a, b) >= 1: a >= 1 and b >= 1.
    if (clamp && clamp->op == BinaryOpKind::Min)
      return minOf(runningExtent(clamp->lhs), runningExtent(clamp->rhs));
    if (!clamp || clamp->op != BinaryOpKind::Max)
      return extent;
    auto notPositive = [](const Expr &side) {
      auto *constant = side->as<IntImm>();
      return constant && constant->value <= 0;
    };
    if (notPositive(clamp->rhs))
      return runningExtent(clamp->lhs);
    if (notPositive(clamp->lhs))
      return runningExtent(clamp->rhs);
    return extent;
  }

  // A strided loop's trip count `(x + r) / c` (a constant c >= 1; map_to_gpu's
  // `(count + 256 - (thread + 1)) / 256`) with a clamped summand x, a min or
  // max: at least 1 where the loop runs, so x >= c - r, which is at least 1
  // where r <= c - 1 is proven; x is then read as a running extent (a split
  // reduction's chunk `min(chunk, max(length - start, 0))` is
  // `min(chunk, length - start)`, as an empty chunk runs no step). Null when
  // the extent is not such a count.
  Expr runningStridedCount(const Expr &extent) {
    auto *quotient = extent->as<Binary>();
    auto *divisor =
        quotient && quotient->op == BinaryOpKind::Div ? quotient->rhs->as<IntImm>() : nullptr;
    if (!divisor || divisor->value < 1)
      return nullptr;
    std::vector<Expr> summands;
    collectAddedTerms(quotient->lhs, summands);
    std::optional<LinearForm> dividend = form(quotient->lhs);
    for (const Expr &summand : summands) {
      auto *clamp = summand->as<Binary>();
      if (!clamp || (clamp->op != BinaryOpKind::Min && clamp->op != BinaryOpKind::Max))
        continue;
      std::optional<LinearForm> clamped = form(summand);
      if (!dividend || !clamped)
        return nullptr;
      LinearForm rest = dividend->plus(*clamped, -1);
      if (!proves(constantForm(divisor->value - 1).plus(rest, -1)))
        continue;
      Expr running = replaced(quotient->lhs, summand, runningExtent(summand));
      return div(running, quotient->rhs);
    }
    return nullptr;
  }

  // The terms `expr` adds (not those it subtracts), through i64 sums and
  // differences.
  static void collectAddedTerms(const Expr &expr, std::vector<Expr> &terms) {
    auto *binary = expr->as<Binary>();
    if (binary && expr->type == ScalarType::I64 && binary->op == BinaryOpKind::Add) {
      collectAddedTerms(binary->lhs, terms);
      collectAddedTerms(binary->rhs, terms);
    } else if (binary && expr->type == ScalarType::I64 && binary->op == BinaryOpKind::Sub) {
      collectAddedTerms(binary->lhs, terms);
    } else {
      terms.push_back(expr);
    }
  }

  // `expr` with its subterm `target` (that node) replaced by `replacement`.
  static Expr replaced(const Expr &expr, const Expr &target, const Expr &replacement) {
    if (expr == target)
      return replacement;
    auto *binary = expr->as<Binary>();
    if (!binary)
      return expr;
    return makeBinary(binary->op, replaced(binary->lhs, target, replacement),
                      replaced(binary->rhs, target, replacement));
  }

  void visitLetStmt(const LetStmt &let) override {
    visit(let.value);
    std::optional<LinearForm> value = form(let.value);
    if (value)
      lets_[let.var] = *value;
    if (isFloat(let.value->type))
      floatLets_[let.var] = let.value;
    visit(let.body);
    lets_.erase(let.var);
    floatLets_.erase(let.var);
  }

  // Only the side a select picks is evaluated where a side reads memory
  // (the code branches), so each side's accesses know the condition.
  void visitSelect(const Select &select) override {
    visitSides(select.cond, select.thenValue, select.elseValue);
  }

  void visitIfThenElse(const IfThenElse &branch) override {
    visitSides(branch.cond, branch.thenCase, branch.elseCase);
  }

  // Each side of a branch (a Stmt or an Expr; the else side may be null)
  // with the facts of `cond` holding or failing.
  template <typename Side>
  void visitSides(const Expr &cond, const Side &thenSide, const Side &elseSide) {
    visit(cond);
    FactsMark facts = mark();
    addConditionFacts(cond, /*holds=*/true);
    visit(thenSide);
    restore(facts);
    if (elseSide) {
      addConditionFacts(cond, /*holds=*/false);
      visit(elseSide);
      restore(facts);
    }
  }

  // The facts here that hold in a kernel launched here: each scalar it
  // takes equals the value passed (the host's variable of the same name,
  // or another expression), and the facts over names the kernel does not
  // bind otherwise (the host's loops and lets the values mention).
  void visitLaunch(const Launch &launch) override {
    IRVisitor::visitLaunch(launch);
    auto kernel = kernels_.find(launch.kernel);
    if (kernel == kernels_.end())
      return;
    std::set<std::string> rebound = boundNames(kernel->second->body);
    LaunchContext context;
    for (size_t i = 0; i < launch.scalars.size() && i < kernel->second->scalars.size(); ++i) {
      const ScalarParam &param = kernel->second->scalars[i];
      // The same name for the same value (a let's, as the host's atoms
      // print it), or another value.
      auto *var = launch.scalars[i]->as<Var>();
      bool sameName = var && var->name == param.name;
      if (sameName && !lets_.contains(var->name))
        continue;
      if (!sameName)
        rebound.insert(param.name);
      if (!isInteger(param.type))
        continue;
      if (std::optional<LinearForm> value = form(launch.scalars[i])) {
        LinearForm equal = atomForm(makeVar(param.type, param.name)).plus(*value, -1);
        context.facts.push_back(equal);
        context.facts.push_back(equal.scaled(-1));
      }
    }
    auto mentionsRebound = [&](const LinearForm &linear, const std::string &except) {
      return std::ranges::any_of(linear.terms, [&](const auto &term) {
        return term.first != except &&
               std::ranges::any_of(freeVars(term.second.first),
                                   [&](const std::string &name) { return rebound.contains(name); });
      });
    };
    // An equality's own parameter is the kernel's; the rest must read the
    // host's names the kernel keeps.
    std::erase_if(context.facts, [&](const LinearForm &fact) {
      return std::ranges::any_of(kernel->second->scalars, [&](const ScalarParam &param) {
        std::string key = toString(makeVar(param.type, param.name));
        return fact.terms.contains(key) && mentionsRebound(fact, key);
      });
    });
    for (const LinearForm &fact : facts_)
      if (!mentionsRebound(fact, ""))
        context.facts.push_back(fact);
    context.clamps = clamps_;
    context.quotients = quotients_;
    context.signedByOperands = signedByOperands_;
    launches[launch.kernel].push_back(std::move(context));
  }

  void visitLoad(const Load &load) override {
    IRVisitor::visitLoad(load);
    // A speculative load cannot fault: its indices are clamped.
    if (load.speculative)
      proven_.record(body_, &load, std::vector<bool>(load.indices.size(), true));
    else
      prove(&load, *load.buffer, load.indices, load.source);
  }
  void visitStore(const Store &store) override {
    IRVisitor::visitStore(store);
    prove(&store, *store.buffer, store.indices, store.source);
  }
  void visitAtomicUpdate(const AtomicUpdate &update) override {
    IRVisitor::visitAtomicUpdate(update);
    prove(&update, *update.buffer, update.indices, update.source);
  }

private:
  void prove(const void *access, const BufferInfo &buffer, const std::vector<Expr> &indices,
             SourceRange source) {
    // An access a pass made on its own (a tree's tile, a stage's copy),
    // with no place in the program, is in range by construction, and one in
    // an `unsafe` kernel or block is the program's to keep in range: not
    // checked, as if proven.
    if (!source.valid() || inUncheckedRegion(source)) {
      proven_.record(body_, access, std::vector<bool>(indices.size(), true));
      return;
    }
    std::vector<bool> dims(indices.size(), false);
    for (size_t dim = 0; dim < indices.size() && dim < buffer.shape.size(); ++dim) {
      std::optional<LinearForm> extent = form(buffer.shape[dim]);
      dims[dim] = extent && atLeastZero(indices[dim]) && belowExtent(indices[dim], *extent);
      if (!dims[dim])
        proven_.recordUnproven({source, buffer.nameInMessages(), dim, toString(indices[dim]),
                                toString(buffer.shape[dim])});
    }
    proven_.record(body_, access, dims);
  }

  bool inUncheckedRegion(SourceRange source) const {
    return std::ranges::any_of(uncheckedRegions_, [&](const SourceRange &region) {
      return region.begin <= source.begin && source.end <= region.end;
    });
  }

  bool atLeastZero(const Expr &index) {
    std::optional<LinearForm> linear = form(index);
    return linear && proves(*linear);
  }

  bool belowExtent(const Expr &index, const LinearForm &extent) {
    std::optional<LinearForm> linear = form(index);
    return linear && proves(extent.plus(*linear, -1).plus(constantForm(1), -1));
  }

  // Whether `r >= 0` follows from the facts: a search of the proofs of a
  // few steps first, then of more (iterative deepening), so that the order
  // in which the search tries facts and atoms' definitions matters little,
  // within kProofSteps in all.
  bool proves(const LinearForm &r) const {
    // The same goal under the same facts and atoms (a register tile's
    // copies, an index and its neighbour's) comes out as before.
    std::string goal = "v" + std::to_string(factsVersion_) + " d" + std::to_string(depth_.size()) +
                       " a" +
                       std::to_string(clamps_.size() + quotients_.size() +
                                      signedByOperands_.size() + floatCasts_.size()) +
                       " " + goalKey(r);
    if (auto known = proofs_.find(goal); known != proofs_.end())
      return known->second;
    return proofs_[goal] = search(r);
  }
  bool search(const LinearForm &r) const {
    // Atoms defined since the last search may prove what it could not.
    searched_.clear();
    int steps = kProofSteps;
    for (int depth : kProofDepths) {
      depthLeft_ = depth;
      if (nonNegative(r, steps))
        return true;
      if (steps < 0)
        return false;
    }
    return false;
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

  // `expr` as an atom, unless it reads memory the function writes: the
  // same load may give another value further on (the array written
  // between), so a fact about it would not hold at the access. An array
  // nothing writes (an input) keeps its elements, so facts about them hold
  // (a gather's `if (k < N) x[k]` with k = idx[i]). A let's value is fixed
  // where it is bound, so a let of a load is an atom, by its name.
  static std::optional<LinearForm> opaque(const Expr &expr) {
    if (!unchanging(expr))
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
      if (auto fixed = fixedSizes_.find(var->name); fixed != fixedSizes_.end())
        return constantForm(fixed->second);
      return atomForm(expr);
    }
    if (auto *cast = expr->as<Cast>();
        cast && expr->type == ScalarType::I64 && isInteger(cast->operand->type))
      return form(cast->operand); // widening keeps the value
    if (auto *cast = expr->as<Cast>(); cast && isFloat(cast->operand->type))
      if (std::optional<LinearForm> atom = opaque(expr)) {
        floatCasts_.try_emplace(toString(expr), cast->operand);
        return atom;
      }
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
        case BinaryOpKind::Div:
          if (rhs->terms.empty() && rhs->constant == 1)
            return lhs; // a flattened loop of one part (privatize_combines' `i.flat / 1`)
          break;
        case BinaryOpKind::Min:
        case BinaryOpKind::Max:
        case BinaryOpKind::Rem:
          break;
        default:
          return opaque(expr);
        }
        // An atom is known by its value, its operands' lets replaced by
        // theirs: a let `parts = min(1024 / max(rows, 1), ...)` and a size
        // choice that spells it out in the sizes are one atom.
        Expr atom = makeBinary(binary->op, lhs->toExpr(), rhs->toExpr());
        std::string key = toString(atom);
        if (binary->op == BinaryOpKind::Min || binary->op == BinaryOpKind::Max) {
          // What the clamp stands for, so a proof can take its cases.
          clamps_.try_emplace(key, Clamp{binary->op == BinaryOpKind::Min, *lhs, *rhs});
          return opaque(atom);
        }
        if (binary->op == BinaryOpKind::Div && rhs->terms.empty() && rhs->constant > 1 &&
            rhs->constant < kLargestFactor)
          quotients_.try_emplace(key, Quotient{*lhs, rhs->constant});
        signedByOperands_.try_emplace(key, Operands{binary->op, *lhs, *rhs, atom});
        return opaque(atom);
      }
    }
    return opaque(expr);
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
    if (isFloat(binary->lhs->type)) {
      addFloatFact(*binary, holds);
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
      addFact(difference.scaled(-1).plus(one, -1));
      break;
    case BinaryOpKind::Le:
      addFact(difference.scaled(-1));
      break;
    case BinaryOpKind::Gt:
      addFact(difference.plus(one, -1));
      break;
    case BinaryOpKind::Ge:
      addFact(difference);
      break;
    case BinaryOpKind::Eq:
      addFact(difference);
      addFact(difference.scaled(-1));
      break;
    default:
      break;
    }
  }

  // When eliminating, inner loop variables go first (their facts mention
  // outer ones and the atoms their ranges are made of), then the other
  // atoms, sizes last (their facts are what is left to check).
  int eliminationOrder(const std::string &key) const {
    if (auto loop = depth_.find(key); loop != depth_.end())
      return loop->second;
    if (sizes_.contains(key))
      return -1;
    return 0;
  }

  // Whether `r >= 0` follows from the facts, within `steps`: a term at a
  // time, in elimination order, is cancelled by a fact that mentions it (a
  // term no fact cancels is left for later: a fact about another may bring
  // the one that does).
  bool nonNegative(const LinearForm &r, int &steps) const {
    // Done: a constant and sizes, all non-negative.
    bool done = r.constant >= 0;
    for (const auto &[key, term] : r.terms)
      done = done && term.second > 0 && sizes_.contains(key);
    if (done)
      return true;
    if (--steps < 0 || depthLeft_ == 0)
      return false;
    // The same goal comes back within one search (an operand's sign, asked
    // by every product and quotient it is part of): what it came to before
    // holds, proven at any depth, or not proven within at least this one.
    std::string goal = goalKey(r);
    if (auto known = searched_.find(goal); known != searched_.end()) {
      if (known->second == kProvenGoal)
        return true;
      if (known->second >= depthLeft_)
        return false;
    }
    bool holds = searchNonNegative(r, steps);
    if (steps >= 0) // a search cut short says nothing
      searched_[goal] = holds ? kProvenGoal : std::max(searched_[goal], depthLeft_);
    return holds;
  }

  // The cancellations nonNegative tries, in elimination order.
  bool searchNonNegative(const LinearForm &r, int &steps) const {
    struct Deeper {
      int &depth;
      explicit Deeper(int &depth) : depth(depth) { --depth; }
      ~Deeper() { ++depth; }
    } deeper(depthLeft_);
    // (A size with a positive coefficient is cancelled only when nothing
    // else is left and the constant is negative: `M - 1 >= 0` inside
    // `i < M` with i >= 0.)
    std::vector<const std::string *> order;
    for (const auto &entry : r.terms)
      order.push_back(&entry.first);
    std::stable_sort(order.begin(), order.end(), [&](const std::string *a, const std::string *b) {
      return eliminationOrder(*a) > eliminationOrder(*b);
    });
    std::vector<std::function<bool(int &)>> ways;
    for (const std::string *key : order)
      ways.push_back([&, key](int &left) { return eliminates(r, *key, left); });
    return anyWay(ways, steps);
  }

  // Whether `r >= 0` follows once its term `key` is cancelled: by a fact
  // (those of the fewest terms first: a guard `i < k` relating the indices
  // is most often the one the proof needs), or by what the atom
  // stands for (a clamp's cases, bounds from its operands, a quotient's
  // facts), tried in order.
  bool eliminates(const LinearForm &r, const std::string &key, int &steps) const {
    int64_t a = r.terms.at(key).second;
    if (std::abs(a) >= kLargestFactor)
      return false;
    std::vector<const LinearForm *> cancelling;
    for (const LinearForm &fact : facts_)
      if (auto term = fact.terms.find(key);
          term != fact.terms.end() && (term->second.second > 0) == (a > 0))
        cancelling.push_back(&fact);
    std::ranges::stable_sort(cancelling, {},
                             [](const LinearForm *fact) { return fact->terms.size(); });
    std::vector<std::function<bool(int &)>> ways;
    for (const LinearForm *fact : cancelling)
      ways.push_back([&, fact](int &left) {
        std::optional<LinearForm> reduced = cancelled(r, key, a, *fact);
        return reduced && nonNegative(*reduced, left);
      });
    if (auto clamp = clamps_.find(key); clamp != clamps_.end())
      ways.push_back(
          [&, clamp](int &left) { return clampEliminates(r, key, a, clamp->second, left); });
    if (auto operands = signedByOperands_.find(key); operands != signedByOperands_.end())
      ways.push_back([&, operands](int &left) {
        for (const LinearForm &bound : operandBounds(operands->second, a, left)) {
          LinearForm withAtomBounded = r;
          withAtomBounded.terms.erase(key);
          withAtomBounded = withAtomBounded.plus(bound.scaled(a), 1);
          if (!tooLarge(withAtomBounded) && nonNegative(withAtomBounded, left))
            return true;
        }
        return false;
      });
    // A float converted to an integer saturates, NaN to 0: at least 0 where
    // the float is not negative.
    if (auto converted = floatCasts_.find(key);
        converted != floatCasts_.end() && a > 0 && floatNotNegative(converted->second))
      ways.push_back([&](int &left) {
        LinearForm withoutAtom = r;
        withoutAtom.terms.erase(key);
        return nonNegative(withoutAtom, left);
      });
    if (auto quotient = quotients_.find(key); quotient != quotients_.end())
      ways.push_back([&, quotient](int &left) {
        for (const LinearForm &fact :
             quotientFacts(key, quotient->second, r.terms.at(key).first, a, left))
          if (std::optional<LinearForm> reduced = cancelled(r, key, a, fact);
              reduced && nonNegative(*reduced, left))
            return true;
        return false;
      });
    return anyWay(ways, steps);
  }

  // Whether one of `ways` succeeds, tried in order.
  static bool anyWay(const std::vector<std::function<bool(int &)>> &ways, int &steps) {
    for (const auto &way : ways) {
      if (way(steps))
        return true;
      if (steps < 0)
        return false;
    }
    return false;
  }

  // Whether r >= 0 for the values the clamp `key` (coefficient a in r) can
  // take: m = min(x, y) is x or y, so r >= 0 for both when r grows with m
  // (it is at its least at the smaller one), else for either (m is at most
  // each); the other way around for a max. Where the facts order x and y
  // (`max(N, 0)` of a size), m is the one they pick.
  bool clampEliminates(const LinearForm &r, const std::string &key, int64_t a, const Clamp &clamp,
                       int &steps) const {
    LinearForm withoutAtom = r;
    withoutAtom.terms.erase(key);
    LinearForm first = withoutAtom.plus(clamp.first.scaled(a), 1);
    LinearForm second = withoutAtom.plus(clamp.second.scaled(a), 1);
    if (tooLarge(first) || tooLarge(second))
      return false;
    if ((a > 0) != clamp.isMin)
      return nonNegative(first, steps) || nonNegative(second, steps);
    LinearForm secondPicked = clamp.first.plus(clamp.second, -1); // min: x - y >= 0 picks y
    if (!clamp.isMin)
      secondPicked = secondPicked.scaled(-1);
    if (nonNegative(secondPicked.scaled(-1), steps))
      return nonNegative(first, steps);
    if (nonNegative(secondPicked, steps))
      return nonNegative(second, steps);
    return nonNegative(first, steps) && nonNegative(second, steps);
  }

  // r with its term `key` (coefficient a) cancelled by `fact` (>= 0): what
  // is left to prove, when `fact` can cancel it.
  static std::optional<LinearForm> cancelled(const LinearForm &r, const std::string &key, int64_t a,
                                             const LinearForm &fact) {
    auto term = fact.terms.find(key);
    if (term == fact.terms.end() || (term->second.second > 0) != (a > 0))
      return std::nullopt;
    int64_t c = term->second.second;
    if (std::abs(c) >= kLargestFactor)
      return std::nullopt;
    // |c| r - |a| fact: the term cancels, and r >= 0 follows from it.
    LinearForm reduced = r.scaled(std::abs(c)).plus(fact.scaled(std::abs(a)), -1);
    if (tooLarge(reduced))
      return std::nullopt;
    return reduced;
  }

  // Values an atom `x op y` (Operands) is at least (`a` > 0: r grows with
  // it) or at most (`a` < 0), from its operands:
  //  - x * y, x / y and x % y are at least 0 when x and y are (a quotient
  //    or remainder by 0 is 0 in the generated code, after its error);
  //  - x % y is at most y - 1 when x >= 0 and y >= 1;
  //  - x / y is at most z - 1 when x <= z * y - 1 for a product z * y the
  //    code computes (a flattened loop's `i.flat / parts` below `rows`);
  //  - x * y is at most d - y when x <= d / y - 1 for a quotient d / y the
  //    code computes, d >= 0 and y >= 1 (a grid-stride loop's
  //    `step * stride`, with `step` below `count / stride`).
  std::vector<LinearForm> operandBounds(const Operands &atom, int64_t a, int &steps) const {
    if (a > 0) {
      if (nonNegative(atom.first, steps) && nonNegative(atom.second, steps))
        return {constantForm(0)};
      return {};
    }
    if (atom.op == BinaryOpKind::Rem && nonNegative(atom.first, steps) &&
        nonNegative(atom.second.plus(constantForm(1), -1), steps))
      return {atom.second.plus(constantForm(1), -1)};
    if (atom.op == BinaryOpKind::Mul)
      return productBounds(atom, steps);
    std::vector<LinearForm> bounds;
    if (atom.op != BinaryOpKind::Div || !nonNegative(atom.first, steps) ||
        !nonNegative(atom.second.plus(constantForm(1), -1), steps))
      return bounds;
    for (const auto &[key, product] : signedByOperands_) {
      if (product.op != BinaryOpKind::Mul)
        continue;
      for (const auto &[count, divisor] : {std::pair{&product.first, &product.second},
                                           std::pair{&product.second, &product.first}}) {
        if (!(*divisor == atom.second))
          continue;
        LinearForm below = atomForm(product.atom).plus(atom.first, -1);
        below.constant -= 1; // z * y - 1 - x >= 0
        if (nonNegative(below, steps))
          bounds.push_back(count->plus(constantForm(1), -1));
      }
    }
    return bounds;
  }

  // The upper bounds of a product x * y from the quotients d / y the code
  // computes (operandBounds): (d / y) * y <= d for d >= 0 and y >= 1, so x
  // below d / y makes x * y at most d - y.
  std::vector<LinearForm> productBounds(const Operands &product, int &steps) const {
    std::vector<LinearForm> bounds;
    for (const auto &[key, quotient] : signedByOperands_) {
      if (quotient.op != BinaryOpKind::Div)
        continue;
      for (const auto &[factor, divisor] : {std::pair{&product.first, &product.second},
                                            std::pair{&product.second, &product.first}}) {
        if (!(*divisor == quotient.second))
          continue;
        LinearForm below = atomForm(quotient.atom).plus(*factor, -1);
        below.constant -= 1; // d / y - 1 - x >= 0
        if (nonNegative(below, steps) && nonNegative(quotient.first, steps) &&
            nonNegative(divisor->plus(constantForm(1), -1), steps))
          bounds.push_back(quotient.first.plus(*divisor, -1));
      }
    }
    return bounds;
  }

  // What q = e / c (c > 1, rounded toward zero) says of q, each fact >= 0:
  // a lower bound for a term that grows with q (`a` > 0), else an upper
  // one. c q >= e - (c - 1) always holds; c q <= e where e >= 0 (proven
  // directly, or from q >= 1), else only c q <= e + c - 1.
  std::vector<LinearForm> quotientFacts(const std::string &key, const Quotient &quotient,
                                        const Expr &atom, int64_t a, int &steps) const {
    LinearForm q;
    q.terms.emplace(key, std::make_pair(atom, int64_t(1)));
    LinearForm cq = q.scaled(quotient.divisor);
    LinearForm slack = constantForm(quotient.divisor - 1);
    if (a > 0)
      return {cq.plus(quotient.dividend, -1).plus(slack, 1)};
    if (nonNegative(quotient.dividend, steps) || nonNegative(q.plus(constantForm(1), -1), steps))
      return {quotient.dividend.plus(cq, -1)};
    return {quotient.dividend.plus(slack, 1).plus(cq, -1)};
  }

  // A goal `r >= 0` as the memo of a search knows it.
  static std::string goalKey(const LinearForm &r) {
    std::string key = std::to_string(r.constant);
    for (const auto &[name, term] : r.terms)
      key += ' ' + std::to_string(term.second) + '*' + name;
    return key;
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
  const std::vector<SourceRange> &uncheckedRegions_;
  const Stmt &body_; // the body proven, which the proofs are recorded by
  std::set<std::string> sizes_;
  std::map<std::string, int64_t> fixedSizes_; // sizes the code is compiled for the value of
  std::map<std::string, int> depth_;          // enclosing loop variables
  std::map<std::string, LinearForm> lets_;    // enclosing lets with linear values
  std::vector<LinearForm> facts_;             // each >= 0 here
  // Float comparisons that hold here, (a, b) for a >= b (printed).
  std::vector<std::pair<std::string, std::string>> floatFacts_;
  std::map<std::string, Expr> floatLets_;  // enclosing lets of float values
  std::map<std::string, Expr> floatCasts_; // integer atoms converted from floats
  std::map<std::string, const KernelFunc *> kernels_;
  mutable int depthLeft_ = 0; // of the search `proves` runs
  // The goals of the search `proves` runs that were settled: kProvenGoal,
  // or the largest depth left at which they were not proven.
  static constexpr int kProvenGoal = std::numeric_limits<int>::max();
  mutable std::unordered_map<std::string, int> searched_;
  // Whole proofs by goal and the state they were searched in (proves);
  // each state of the facts has its own version.
  mutable std::unordered_map<std::string, bool> proofs_;
  uint64_t factsVersion_ = 0, lastFactsVersion_ = 0;
  std::map<std::string, Clamp> clamps_;       // min and max atoms
  std::map<std::string, Quotient> quotients_; // atoms e / c, c a constant above 1
  // Atoms a * b (neither a constant) and a / b.
  std::map<std::string, Operands> signedByOperands_;
};

} // namespace

ProvenAccesses proveAccessesInBounds(const Function &function) {
  // One prover per body: each kernel's names are its own.
  ProvenAccesses proven;
  Prover host(function, function.body, proven);
  host.visit(function.body);
  for (const KernelFunc &kernel : function.kernels) {
    Prover prover(function, kernel.body, proven);
    // A kernel launched once knows what held there (one launched from
    // several places would need what held at all of them).
    if (auto launched = host.launches.find(kernel.name);
        launched != host.launches.end() && launched->second.size() == 1)
      prover.assumeLaunchContext(launched->second.front());
    prover.visit(kernel.body);
  }
  return proven;
}

} // namespace loopc::passes
