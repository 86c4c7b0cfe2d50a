// fuse_producers: a local array that one parfor writes in full and one later
// statement reads once per element is never stored: the read computes the
// element where it is needed (producer-consumer fusion, as Futhark fuses a
// map into a map or a redomap). That saves writing the array and reading it
// back, a pass over memory each, and on the GPU a launch; a transpose feeding
// a matrix-vector product becomes the product read through the transposed
// indices.
//
// What makes the rewrite keep the program's meaning, checked for array T:
// - T is a local array (allocated in global memory, not a parameter), written
//   by a producer: a statement that is a nest of parallel loops over
//   [0, extent) of T's dimensions in order, whose body is lets then
//   `T[v1]..[vk] = e`, the v the loop variables. Every element is written
//   once, by e, and nothing else writes T (drop_overwritten_fills has
//   removed the zero fills a kernel call's lowering makes for it).
// - T is read once, in a later statement of that block, at indices that are
//   the variables of all the loops around the read inside that statement,
//   each a parallel loop or a reduction's: every element is read at most once,
//   so nothing is computed twice.
// - No statement from the producer through the reader writes an array e
//   reads, and no name e uses is bound again on the way to the read: e means
//   there what it meant in the producer.
// - e divides no integers: a division by zero would move or vanish.
// Fusions repeat until none applies, so chains of stages fuse into the last.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/ArrayUses.h"

#include <algorithm>
#include <expected>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// The arrays an expression reads, and whether it divides integers.
class ExpressionReads : public IRVisitor {
public:
  std::set<const BufferInfo *> arrays;
  bool dividesIntegers = false;

protected:
  void visitLoad(const Load &node) override {
    arrays.insert(node.buffer.get());
    IRVisitor::visitLoad(node);
  }
  void visitBinary(const Binary &node) override {
    if ((node.op == BinaryOpKind::Div || node.op == BinaryOpKind::Rem) && !isFloat(node.type))
      dividesIntegers = true;
    IRVisitor::visitBinary(node);
  }
};

// Replaces one Load node (by identity) with an expression.
class ReplaceLoad : public IRMutator {
public:
  ReplaceLoad(const Load *target, Expr replacement)
      : target_(target), replacement_(std::move(replacement)) {}

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    if (&node == target_)
      return replacement_;
    return IRMutator::visitLoad(node, self);
  }

private:
  const Load *target_;
  Expr replacement_;
};

// One fusion found in a block: the producer, the statement reading, and the
// expression that replaces the read.
struct Fusion {
  size_t producer = 0, reader = 0;
  const Load *read = nullptr;
  Expr element;
};

// "line 12": where a read is, for remarks ("an unknown line" in IR read
// from text, which has no source).
std::string lineOf(const Load &load) {
  if (!load.source.valid())
    return "an unknown line";
  return "line " + std::to_string(load.source.begin.line);
}

// The fusion of the array `stmts[producer]` writes (as an expression), when
// every condition holds; otherwise why not, for a remark (empty for an array
// that must be stored: a parameter, or one never read).
std::expected<Fusion, std::string> findFusion(const std::vector<Stmt> &stmts, size_t producer,
                                              const Stmt &scope, const FullWrite &write) {
  const BufferInfo *array = write.store->buffer.get();
  if (array->isParameter)
    return std::unexpected("");
  ArrayUses uses(array);
  uses.visit(scope);
  if (uses.writes != 1)
    return std::unexpected("it is written by " + std::to_string(uses.writes) +
                           " statements, not by its producer alone");
  if (uses.reads.size() != 1)
    return std::unexpected(uses.reads.empty()
                               ? ""
                               : "it is read at " + std::to_string(uses.reads.size()) +
                                     " places, not once");
  Fusion fusion;
  fusion.producer = producer;
  const ArrayUses::Read &read = uses.reads.front();
  // Read once per element: indexed by every loop around it, each loop once.
  if (read.underSerialLoop)
    return std::unexpected("its read at " + lineOf(*read.load) +
                           " is inside a serial loop, which would compute each element again");
  bool oncePerElement = read.loopVars.size() == read.load->indices.size();
  std::set<std::string> indexVars;
  for (const Expr &index : read.load->indices) {
    const auto *var = index->as<Var>();
    if (!var || std::ranges::find(read.loopVars, var->name) == read.loopVars.end() ||
        !indexVars.insert(var->name).second)
      oncePerElement = false;
  }
  if (!oncePerElement)
    return std::unexpected("its read at " + lineOf(*read.load) +
                           " is not indexed by exactly the parallel and reduction loops around "
                           "it, each once, so an element would be computed more than once");
  // The element, lets inlined.
  Expr element = write.store->value;
  for (auto let = write.lets.rbegin(); let != write.lets.rend(); ++let)
    element = substitute(element, {{let->first, let->second}});
  ExpressionReads reads;
  reads.visit(element);
  if (reads.dividesIntegers)
    return std::unexpected("its element divides integers (a division by zero would move)");
  if (reads.arrays.contains(array))
    return std::unexpected("its element reads the array itself");
  std::set<std::string> loopVars(write.loopVars.begin(), write.loopVars.end());
  for (const std::string &name : freeVars(element))
    if (!loopVars.contains(name) && read.binders.contains(name))
      return std::unexpected("'" + name + "', which its element uses, is bound again before " +
                             "its read at " + lineOf(*read.load));
  // The statement holding the read, and none before it writing what e reads.
  std::optional<size_t> reader;
  for (size_t i = producer + 1; i < stmts.size() && !reader; ++i) {
    ArrayUses here(array);
    here.visit(stmts[i]);
    if (!here.reads.empty())
      reader = i;
    std::set<const BufferInfo *> written = writtenArrays(stmts[i]);
    // In the order of the names, for a deterministic remark.
    std::set<std::string> overwritten;
    for (const BufferInfo *source : reads.arrays)
      if (written.contains(source))
        overwritten.insert(source->nameInMessages());
    if (!overwritten.empty())
      return std::unexpected("its element reads '" + *overwritten.begin() +
                             "', which a statement up to its read at " + lineOf(*read.load) +
                             " writes");
  }
  if (!reader)
    return std::unexpected("it is not read after its producer in the block that allocates it");
  fusion.reader = *reader;
  fusion.read = read.load;
  std::map<std::string, Expr> at;
  for (size_t dim = 0; dim < write.loopVars.size(); ++dim)
    at[write.loopVars[dim]] = read.load->indices[dim];
  fusion.element = substitute(element, at);
  return fusion;
}

// A remark about an array's producer: where, and what.
struct ProducerRemark {
  SourceRange producer;
  std::string message;
};

// The parfor of a producer statement, where its remarks point.
SourceRange producerSource(const Stmt &stmt) {
  const StmtNode *node = skipSingletonBlocks(stmt);
  const auto *loop = node ? node->as<For>() : nullptr;
  return loop ? loop->source : SourceRange{};
}

// Fuses the first array that can be, looking at each Allocate's block; the
// arrays it looked at before, not fused, with why.
class FuseOne : public IRMutator {
public:
  explicit FuseOne(const RemarkReporter &remarks) : remarks_(remarks) {}
  bool fused = false;
  std::optional<ProducerRemark> applied;
  std::vector<ProducerRemark> declined;

protected:
  Stmt visitAllocate(const Allocate &node, const Stmt &self) override {
    Stmt body = mutate(node.body);
    if (!fused) {
      const auto *block = node.body->as<Block>();
      std::vector<Stmt> single = {node.body};
      const std::vector<Stmt> &stmts = block ? block->stmts : single;
      std::string quoted = "'" + remarks_.programName(node.buffer->nameInMessages()) + "'";
      for (size_t producer = 0; producer < stmts.size() && !fused; ++producer) {
        std::optional<FullWrite> write = fullWrite(stmts[producer], node.buffer.get());
        if (!write)
          continue;
        SourceRange source = producerSource(stmts[producer]);
        if (!write->isExpression) {
          if (!node.buffer->isParameter)
            declined.push_back({source, quoted + " not fused into its reader: its parfor's body "
                                                 "is more than lets and one store to it"});
          continue;
        }
        std::expected<Fusion, std::string> fusion = findFusion(stmts, producer, node.body, *write);
        if (!fusion) {
          if (!fusion.error().empty())
            declined.push_back({source, quoted + " not fused into its reader: " + fusion.error()});
          continue;
        }
        fused = true;
        applied = {source, quoted + " fused into its reader at " + lineOf(*fusion->read) +
                               ": each element is computed where it is read, and the array "
                               "is never stored"};
        return apply(stmts, *fusion); // the array is gone with its producer
      }
    }
    if (body == node.body)
      return self;
    return std::make_shared<Allocate>(node.buffer, body);
  }

private:
  static Stmt apply(const std::vector<Stmt> &stmts, const Fusion &fusion) {
    std::vector<Stmt> kept;
    for (size_t i = 0; i < stmts.size(); ++i) {
      if (i == fusion.producer)
        continue;
      kept.push_back(i == fusion.reader ? ReplaceLoad(fusion.read, fusion.element).mutate(stmts[i])
                                        : stmts[i]);
    }
    return makeBlock(std::move(kept));
  }

  const RemarkReporter &remarks_;
};

} // namespace

ir::Function fuseProducers(ir::Function function, const RemarkReporter &remarks) {
  for (;;) {
    FuseOne fuse(remarks);
    Stmt body = fuse.mutate(function.body);
    if (!fuse.fused) {
      // The last round met every array left, each with why it stays.
      for (const ProducerRemark &declined : fuse.declined)
        remarks.declined(declined.producer, declined.message);
      return function;
    }
    remarks.applied(fuse.applied->producer, fuse.applied->message);
    function.body = body;
  }
}

} // namespace loopc::passes
