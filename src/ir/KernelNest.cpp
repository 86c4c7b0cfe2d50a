#include "ir/KernelNest.h"

#include <algorithm>

namespace loopc::ir {

namespace {

const For *alongDim(const std::vector<const For *> &loops, int dim) {
  auto loop = std::ranges::find_if(loops, [&](const For *l) { return l->gpuDim == dim; });
  return loop == loops.end() ? nullptr : *loop;
}

Stmt copyAround(const For &loop, Stmt body) {
  return std::make_shared<For>(loop.var, loop.min, loop.extent, loop.forKind, loop.gpuDim,
                               std::move(body), loop.source);
}

} // namespace

const For *KernelNest::blockAlong(int dim) const { return alongDim(blocks, dim); }
const For *KernelNest::threadAlong(int dim) const { return alongDim(threads, dim); }

Stmt KernelNest::rebuilt(Stmt inner, const std::function<Stmt(Stmt)> &aroundThreads) const {
  for (auto thread = threads.rbegin(); thread != threads.rend(); ++thread)
    inner = copyAround(**thread, std::move(inner));
  if (aroundThreads)
    inner = aroundThreads(std::move(inner));
  for (auto block = blocks.rbegin(); block != blocks.rend(); ++block)
    inner = copyAround(**block, std::move(inner));
  return inner;
}

std::vector<const For *> threadLoopsAt(const StmtNode &stmt) {
  std::vector<const For *> threads;
  for (const auto *loop = stmt.as<For>(); loop && loop->forKind == ForKind::GpuThread;
       loop = loop->body->as<For>())
    threads.push_back(loop);
  return threads;
}

std::optional<KernelNest> kernelNestAt(const Stmt &stmt) {
  const auto *outer = stmt->as<For>();
  if (!outer || outer->forKind != ForKind::GpuBlock)
    return std::nullopt;
  KernelNest nest;
  Stmt inner = stmt;
  for (const auto *loop = outer; loop && loop->forKind == ForKind::GpuBlock;
       loop = inner->as<For>()) {
    nest.blocks.push_back(loop);
    inner = loop->body;
  }
  nest.threadNest = inner;
  nest.threads = threadLoopsAt(*inner);
  nest.body = nest.threads.empty() ? inner : nest.threads.back()->body;
  return nest;
}

std::optional<GuardedPoint> guardedPointOf(const Stmt &body) {
  GuardedPoint point;
  point.guarded = body;
  while (const auto *let = point.guarded->as<LetStmt>()) {
    point.lets.push_back(let);
    point.guarded = let->body;
  }
  point.guard = point.guarded->as<IfThenElse>();
  if (!point.guard || point.guard->elseCase)
    return std::nullopt;
  return point;
}

} // namespace loopc::ir
