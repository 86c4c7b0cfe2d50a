// fuse_sibling_reductions: reductions over the same loops that follow one
// another are lowered as one group (lowering/ReductionGroups.h): the loops
// run once and each point feeds every member, so data they share is read
// once. `sum_and_max` sums and takes the maximum of x in one pass over x (one
// pair of kernels, not two); a row's sum and sum of squares come from one
// walk of the row. Horizontal fusion, after Futhark's.
//
// The later reduction usually sits a few statements further on, inside the
// scopes the lowering opened (`global f32 acc_2` around the rest of the
// block, `let s = acc` after the first reduction), after the store of its
// neutral element. Those statements are read as one chain; the reduction
// moves up to join the group when the statements it passes allow it:
//  - a statement it conflicts with (its accumulator's initial store) moves
//    before the group, if that crosses nothing it conflicts with;
//  - a scope whose name it uses (its accumulator's Allocate) is hoisted
//    around the group, if the scope's own header needs nothing bound or
//    written in between;
//  - it may not read any member's accumulator (that value exists only once
//    the fused loops end), nor a member its accumulator.
// Everything else stays in order after the group. Reductions nested in a
// member's value are left to lower_reductions, as are groups of one.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionGroups.h"

#include <algorithm>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Members per group: each adds a shared tile per block to the tree.
constexpr size_t kMaxGroup = 4;
// Statements searched after a reduction for its next sibling.
constexpr size_t kMaxDistance = 16;

// The arrays a statement reads and writes, and the names it uses.
struct Effects {
  std::set<const BufferInfo *> reads, writes;
  std::set<std::string> vars;

  void add(const Effects &other) {
    reads.insert(other.reads.begin(), other.reads.end());
    writes.insert(other.writes.begin(), other.writes.end());
    vars.insert(other.vars.begin(), other.vars.end());
  }
  // One writes what the other reads or writes: their order matters.
  bool conflictsWith(const Effects &other) const {
    auto meets = [](const std::set<const BufferInfo *> &a, const std::set<const BufferInfo *> &b) {
      return std::ranges::any_of(a, [&](const BufferInfo *buffer) { return b.contains(buffer); });
    };
    return meets(writes, other.reads) || meets(writes, other.writes) || meets(other.writes, reads);
  }
  bool uses(const BufferInfo *buffer) const {
    return reads.contains(buffer) || writes.contains(buffer);
  }
};

class EffectCollector : public IRVisitor {
public:
  Effects effects;

protected:
  void visitLoad(const Load &node) override {
    effects.reads.insert(node.buffer.get());
    IRVisitor::visitLoad(node);
  }
  void visitStore(const Store &node) override {
    effects.writes.insert(node.buffer.get());
    IRVisitor::visitStore(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    effects.reads.insert(node.buffer.get());
    effects.writes.insert(node.buffer.get());
    IRVisitor::visitAtomicUpdate(node);
  }
  void visitReduce(const Reduce &node) override {
    effects.reads.insert(node.accumulator.get());
    effects.writes.insert(node.accumulator.get());
    IRVisitor::visitReduce(node);
  }
  void visitScan(const Scan &node) override {
    effects.writes.insert(node.target.get());
    IRVisitor::visitScan(node);
  }
  void visitAllocate(const Allocate &node) override {
    for (const Expr &extent : node.buffer->shape)
      visit(extent);
    IRVisitor::visitAllocate(node);
  }
};

Effects effectsOf(const Stmt &stmt) {
  EffectCollector collector;
  collector.visit(stmt);
  collector.effects.vars = freeVars(stmt);
  return collector.effects;
}

Effects effectsOf(const Expr &expr) {
  EffectCollector collector;
  collector.visit(expr);
  collector.effects.vars = freeVars(expr);
  return collector.effects;
}

// The header of a scope alone (a let's value, an array's extents): what
// hoisting it needs.
Effects headerEffects(const Stmt &opener) {
  if (auto *let = opener->as<LetStmt>())
    return effectsOf(let->value);
  Effects effects;
  for (const Expr &extent : opener->as<Allocate>()->buffer->shape)
    effects.add(effectsOf(extent));
  return effects;
}

bool containsReduction(const Stmt &stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visitReduce(const Reduce &) override { found = true; }
    void visitScan(const Scan &) override { found = true; }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

// One statement of the chain after a reduction: a plain statement, or a
// scope (Allocate, LetStmt) whose body is the rest of the chain.
struct Item {
  Stmt stmt;
  bool opensScope = false;
};

// The statements from `stmts[from]` on, entering the scope (or block) that
// ends the list, as a chain.
void linearize(const std::vector<Stmt> &stmts, size_t from, std::vector<Item> &chain) {
  for (size_t i = from; i < stmts.size(); ++i) {
    const Stmt &stmt = stmts[i];
    bool last = i + 1 == stmts.size();
    if (last && stmt->as<Block>())
      return linearize(stmt->as<Block>()->stmts, 0, chain);
    if (last && (stmt->as<Allocate>() || stmt->as<LetStmt>())) {
      chain.push_back({stmt, true});
      const Stmt &body =
          stmt->as<Allocate>() ? stmt->as<Allocate>()->body : stmt->as<LetStmt>()->body;
      return linearize({body}, 0, chain);
    }
    chain.push_back({stmt, false});
  }
}

// The scope `opener` around `body`.
Stmt rewrap(const Stmt &opener, Stmt body) {
  if (auto *allocate = opener->as<Allocate>())
    return std::make_shared<Allocate>(allocate->buffer, std::move(body));
  auto *let = opener->as<LetStmt>();
  return std::make_shared<LetStmt>(let->var, let->value, std::move(body));
}

// The chain from `from` on as statements again.
Stmt rebuild(const std::vector<Item> &chain, size_t from) {
  std::vector<Stmt> stmts;
  for (size_t i = from; i < chain.size(); ++i) {
    if (chain[i].opensScope) {
      stmts.push_back(rewrap(chain[i].stmt, rebuild(chain, i + 1)));
      break;
    }
    stmts.push_back(chain[i].stmt);
  }
  return makeBlock(stmts);
}

// The name or array a scope binds is used by `effects`.
bool bindsUsed(const Stmt &opener, const Effects &effects) {
  if (auto *let = opener->as<LetStmt>())
    return effects.vars.contains(let->var);
  return effects.uses(opener->as<Allocate>()->buffer.get());
}

class SiblingFuser : public ReductionPlacement {
protected:
  Stmt visitBlock(const Block &node, const Stmt &self) override {
    for (size_t p = 0; p < node.stmts.size(); ++p)
      if (std::optional<Stmt> fused = fuseFrom(node.stmts, p)) {
        std::vector<Stmt> stmts(node.stmts.begin(), node.stmts.begin() + p);
        stmts.push_back(*fused);
        // The rest may hold further groups.
        return mutate(makeBlock(stmts));
      }
    return IRMutator::visitBlock(node, self);
  }

private:
  // What moving the candidate at chain[candidate] up to the group takes.
  struct Plan {
    std::set<size_t> hoisted, moved;
  };

  // Whether `candidate` (a Reduce) can join `group`: same loops, no nested
  // reductions, and no member reads another's accumulator.
  static bool fitsGroup(const std::vector<Stmt> &group, const Stmt &candidate) {
    const Reduce &first = *group.front()->as<Reduce>();
    const Reduce &joining = *candidate->as<Reduce>();
    if (joining.loops.size() != first.loops.size() || group.size() >= kMaxGroup ||
        containsReduction(joining.valueSetup))
      return false;
    std::map<std::string, Expr> renames;
    for (size_t i = 0; i < first.loops.size(); ++i) {
      if (!sameExpr(substitute(joining.loops[i].min, renames), first.loops[i].min) ||
          !sameExpr(substitute(joining.loops[i].extent, renames), first.loops[i].extent))
        return false;
      renames[joining.loops[i].var] = makeVar(first.loops[i].min->type, first.loops[i].var);
    }
    Effects joiningEffects = effectsOf(candidate);
    for (const Stmt &memberStmt : group) {
      const Reduce &member = *memberStmt->as<Reduce>();
      if (member.accumulator == joining.accumulator ||
          joiningEffects.reads.contains(member.accumulator.get()) ||
          effectsOf(memberStmt).reads.contains(joining.accumulator.get()))
        return false;
    }
    return true;
  }

  // How the reduction at chain[candidate] can move up to the group, if it
  // can (see the file comment).
  static std::optional<Plan> planMove(const std::vector<Item> &chain, size_t candidate,
                                      const Effects &groupEffects) {
    Plan plan;
    Effects moving = effectsOf(chain[candidate].stmt); // the candidate and what moves with it
    for (size_t i = candidate; i-- > 0;) {
      const Item &item = chain[i];
      if (item.opensScope) {
        if (bindsUsed(item.stmt, moving)) {
          plan.hoisted.insert(i);
          moving.add(headerEffects(item.stmt));
        }
      } else if (effectsOf(item.stmt).conflictsWith(moving)) {
        plan.moved.insert(i);
        moving.add(effectsOf(item.stmt));
      }
    }
    // What moves up crosses the group and what it passes: a hoisted scope
    // goes above every statement before it (moved ones too), a moved
    // statement above those that stay. Neither may leave a scope whose name
    // it uses or pass a statement it conflicts with.
    for (size_t i = 0; i < candidate; ++i) {
      bool hoisted = plan.hoisted.contains(i);
      if (!hoisted && !plan.moved.contains(i))
        continue;
      Effects effects = hoisted ? headerEffects(chain[i].stmt) : effectsOf(chain[i].stmt);
      if (effects.conflictsWith(groupEffects))
        return std::nullopt;
      for (size_t j = 0; j < i; ++j) {
        if (plan.hoisted.contains(j) || (!hoisted && plan.moved.contains(j)))
          continue;
        if (chain[j].opensScope ? bindsUsed(chain[j].stmt, effects)
                                : effectsOf(chain[j].stmt).conflictsWith(effects))
          return std::nullopt;
      }
    }
    return plan;
  }

  // Fuses the reduction at stmts[p] with the siblings that can join it;
  // the statements from p on, rebuilt, when any did.
  std::optional<Stmt> fuseFrom(const std::vector<Stmt> &stmts, size_t p) {
    auto *first = stmts[p]->as<Reduce>();
    if (!first || containsReduction(first->valueSetup))
      return std::nullopt;
    std::vector<Stmt> group = {stmts[p]};
    Effects groupEffects = effectsOf(stmts[p]);
    std::vector<Item> chain;
    linearize(stmts, p + 1, chain);
    std::vector<Stmt> hoisted, moved;
    for (bool joined = true; joined;) {
      joined = false;
      for (size_t c = 0; c < chain.size() && c < kMaxDistance; ++c) {
        if (!chain[c].stmt->as<Reduce>() || !fitsGroup(group, chain[c].stmt))
          continue;
        std::optional<Plan> plan = planMove(chain, c, groupEffects);
        if (!plan)
          continue;
        std::vector<Item> rest;
        for (size_t i = 0; i < chain.size(); ++i) {
          if (plan->hoisted.contains(i))
            hoisted.push_back(chain[i].stmt);
          else if (plan->moved.contains(i))
            moved.push_back(chain[i].stmt);
          else if (i != c)
            rest.push_back(chain[i]);
        }
        group.push_back(chain[c].stmt);
        groupEffects.add(effectsOf(chain[c].stmt));
        chain = std::move(rest);
        joined = true;
        break;
      }
    }
    if (group.size() == 1)
      return std::nullopt;

    std::vector<GroupMember> members;
    for (const Stmt &stmt : group) {
      auto *member = stmt->as<Reduce>();
      members.push_back(renamedLoops({member, member->valueSetup, member->value}, *first));
    }
    Stmt lowered = inHostCode() ? lowering_.tree(members) : lowering_.serial(members);
    std::vector<Stmt> body = moved;
    body.push_back(lowered);
    body.push_back(rebuild(chain, 0));
    Stmt result = makeBlock(body);
    for (size_t i = hoisted.size(); i-- > 0;)
      result = rewrap(hoisted[i], result);
    return result;
  }

  ReductionGroupLowering lowering_{"fused."};
};

} // namespace

Function fuseSiblingReductions(Function function) {
  function.body = SiblingFuser().mutate(function.body);
  return function;
}

} // namespace loopc::passes
