// Gathering sibling reductions (see SiblingGroups.h).
#include "passes/lowering/SiblingGroups.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/analysis/ArrayUses.h"

#include <algorithm>
#include <expected>
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

// The arrays a statement or expression reads (its writes are
// writtenArrays'); an atomic update and a reduction read what they update.
class ReadArrays : public IRVisitor {
public:
  std::set<const BufferInfo *> arrays;

protected:
  void visitLoad(const Load &node) override {
    arrays.insert(node.buffer.get());
    IRVisitor::visitLoad(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    arrays.insert(node.buffer.get());
    IRVisitor::visitAtomicUpdate(node);
  }
  void visitReduce(const Reduce &node) override {
    arrays.insert(node.accumulator.get());
    IRVisitor::visitReduce(node);
  }
  void visitAllocate(const Allocate &node) override {
    for (const Expr &extent : node.buffer->shape)
      visit(extent);
    IRVisitor::visitAllocate(node);
  }
};

Effects effectsOf(const Stmt &stmt) {
  ReadArrays reads;
  reads.visit(stmt);
  return {std::move(reads.arrays), writtenArrays(stmt), freeVars(stmt)};
}

Effects effectsOf(const Expr &expr) {
  ReadArrays reads;
  reads.visit(expr);
  return {std::move(reads.arrays), {}, freeVars(expr)};
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
  // A plain statement's effects; a scope's header's (headerEffects).
  Effects effects;
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
      chain.push_back({stmt, true, headerEffects(stmt)});
      const Stmt &body =
          stmt->as<Allocate>() ? stmt->as<Allocate>()->body : stmt->as<LetStmt>()->body;
      return linearize({body}, 0, chain);
    }
    chain.push_back({stmt, false, effectsOf(stmt)});
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

// What moving the candidate at chain[candidate] up to the group takes.
struct Plan {
  std::set<size_t> hoisted, moved;
};

// "the redomap at line 7".
std::string redomapAt(const Reduce &reduce) {
  return "the redomap at line " + std::to_string(reduce.source.begin.line);
}

// "0..N", "1..1 + N": a loop's range as a program writes it.
std::string describeLoop(const Reduce::Loop &loop) {
  const auto *min = loop.min->as<IntImm>();
  return toString(loop.min) + ".." + (min && min->value == 0 ? "" : toString(loop.min) + " + ") +
         toString(loop.extent);
}

// Why `candidate` (a Reduce) cannot join `group` (same loops, no nested
// reductions, and no member reads another's accumulator); empty when it can.
std::string whyNotInGroup(const std::vector<Stmt> &group, const Stmt &candidate) {
  const Reduce &first = *group.front()->as<Reduce>();
  const Reduce &joining = *candidate->as<Reduce>();
  if (joining.loops.size() != first.loops.size())
    return "it reduces over " + std::to_string(joining.loops.size()) + " loops, " +
           redomapAt(first) + " over " + std::to_string(first.loops.size());
  if (group.size() >= kMaxGroup)
    return "a group has at most " + std::to_string(kMaxGroup) + " members";
  if (containsReduction(joining.valueSetup))
    return "its value holds a reduction of its own";
  std::map<std::string, Expr> renames;
  for (size_t i = 0; i < first.loops.size(); ++i) {
    if (!sameExpr(substitute(joining.loops[i].min, renames), first.loops[i].min) ||
        !sameExpr(substitute(joining.loops[i].extent, renames), first.loops[i].extent))
      return "its loop over " + describeLoop(joining.loops[i]) + " is not that of " +
             redomapAt(first) + ", over " + describeLoop(first.loops[i]);
    renames[joining.loops[i].var] = makeVar(first.loops[i].min->type, first.loops[i].var);
  }
  Effects joiningEffects = effectsOf(candidate);
  for (const Stmt &memberStmt : group) {
    const Reduce &member = *memberStmt->as<Reduce>();
    if (member.accumulator == joining.accumulator)
      return "it folds into the accumulator of " + redomapAt(member);
    if (joiningEffects.reads.contains(member.accumulator.get()))
      return "it reads the result of " + redomapAt(member) + ", known only after the walk";
    if (effectsOf(memberStmt).reads.contains(joining.accumulator.get()))
      return redomapAt(member) + " reads its result";
  }
  return "";
}

// How the reduction at chain[candidate] can move up to the group, if it
// can (see the file comment).
// What keeps the reduction from moving up past `blocker`, for a remark.
std::string blockedBy(const Item &blocker, bool byGroup) {
  std::string what;
  if (const auto *let = blocker.stmt->as<LetStmt>())
    what = "it uses '" + let->var + "', bound between them";
  else if (const auto *allocate = blocker.stmt->as<Allocate>())
    what = "it uses '" + allocate->buffer->nameInMessages() + "', allocated between them";
  else
    what = "a statement between them reads what it writes or writes what it reads";
  return what + (byGroup ? " from the group's results" : ", which cannot move before the group");
}

std::expected<Plan, std::string> planMove(const std::vector<Item> &chain, size_t candidate,
                                          const Effects &groupEffects) {
  Plan plan;
  Effects moving = chain[candidate].effects; // the candidate and what moves with it
  for (size_t i = candidate; i-- > 0;) {
    const Item &item = chain[i];
    if (item.opensScope ? bindsUsed(item.stmt, moving) : item.effects.conflictsWith(moving)) {
      (item.opensScope ? plan.hoisted : plan.moved).insert(i);
      moving.add(item.effects);
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
    const Effects &effects = chain[i].effects;
    if (effects.conflictsWith(groupEffects))
      return std::unexpected(blockedBy(chain[i], true));
    for (size_t j = 0; j < i; ++j) {
      if (plan.hoisted.contains(j) || (!hoisted && plan.moved.contains(j)))
        continue;
      if (chain[j].opensScope ? bindsUsed(chain[j].stmt, effects)
                              : chain[j].effects.conflictsWith(effects))
        return std::unexpected(blockedBy(chain[i], false));
    }
  }
  return plan;
}

} // namespace

std::optional<SiblingGroup> gatherSiblings(const std::vector<Stmt> &stmts, size_t p,
                                           std::vector<SiblingRefusal> *refusals) {
  auto *first = stmts[p]->as<Reduce>();
  if (!first || containsReduction(first->valueSetup))
    return std::nullopt;
  std::vector<Stmt> group = {stmts[p]};
  Effects groupEffects = effectsOf(stmts[p]);
  std::vector<Item> chain;
  linearize(stmts, p + 1, chain);
  SiblingGroup result;
  // The last reason each candidate could not join for, by candidate.
  std::map<const Reduce *, std::string> refused;
  for (bool joined = true; joined;) {
    joined = false;
    for (size_t c = 0; c < chain.size() && c < kMaxDistance; ++c) {
      const auto *candidate = chain[c].stmt->as<Reduce>();
      if (!candidate)
        continue;
      if (std::string why = whyNotInGroup(group, chain[c].stmt); !why.empty()) {
        refused[candidate] = why;
        continue;
      }
      std::expected<Plan, std::string> plan = planMove(chain, c, groupEffects);
      if (!plan) {
        refused[candidate] = plan.error();
        continue;
      }
      refused.erase(candidate);
      std::vector<Item> rest;
      for (size_t i = 0; i < chain.size(); ++i) {
        if (plan->hoisted.contains(i))
          result.hoisted.push_back(chain[i].stmt);
        else if (plan->moved.contains(i))
          result.moved.push_back(chain[i].stmt);
        else if (i != c)
          rest.push_back(chain[i]);
      }
      group.push_back(chain[c].stmt);
      groupEffects.add(chain[c].effects);
      chain = std::move(rest);
      joined = true;
      break;
    }
  }
  if (refusals)
    for (size_t c = 0; c < chain.size() && c < kMaxDistance; ++c)
      if (const auto *candidate = chain[c].stmt->as<Reduce>(); refused.contains(candidate))
        refusals->push_back({candidate, refused.at(candidate)});
  if (group.size() == 1)
    return std::nullopt;
  for (const Stmt &member : group)
    result.members.push_back(member->as<Reduce>());
  result.rest = rebuild(chain, 0);
  return result;
}

Stmt SiblingGroup::assemble(Stmt group, const std::function<Stmt(const Stmt &)> &each) const {
  std::vector<Stmt> body;
  for (const Stmt &stmt : moved)
    body.push_back(each(stmt));
  body.push_back(std::move(group));
  body.push_back(each(rest));
  Stmt result = makeBlock(body);
  for (size_t i = hoisted.size(); i-- > 0;)
    result = rewrap(hoisted[i], result);
  return result;
}

} // namespace loopc::passes
