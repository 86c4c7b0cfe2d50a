// The host code of a program at the sizes of a run, as both performance
// models see it: every iteration of a short loop, a long loop at a few
// points of its range (its launches may shrink with it, as an LU's do),
// each statement weighted by how often it runs; lets and loop variables
// bound to their values where the sizes give them. A model says what each
// launch, fill and statement costs (GpuModel.h, CpuModel.h).
#pragma once

#include "ir/IR.h"
#include "perf/KernelProfile.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loopc::perf {

class HostWalk {
public:
  HostWalk(const ir::Function &function, std::map<std::string, int64_t> values)
      : function_(function), values_(std::move(values)) {}
  virtual ~HostWalk() = default;

  void run();
  // Some count is a guess: a branch or a bound the sizes do not decide.
  bool approximate() const { return approximate_; }

protected:
  // One launch as the host code makes it: its kernel, its geometry, the
  // values of the kernel's sizes and scalars, and a key that tells apart
  // launches of one kernel with other geometry or scalars.
  struct LaunchSite {
    const ir::KernelFunc &kernel;
    LaunchShape shape;
    std::map<std::string, int64_t> values;
    std::string key;
  };

  // `times` executions of a launch, of an allocation of `bytes` (host
  // temporaries start zeroed: a fill) and of a statement of the host code.
  virtual void launched(const LaunchSite &site, double times) = 0;
  virtual void allocated(double bytes, double times) = 0;
  virtual void stored(const ir::Store &store, double times) = 0;

  std::optional<int64_t> evaluate(const ir::ExprNode &expr) const;
  void markApproximate() { approximate_ = true; }
  // The loops and lets around the statement being walked, outermost first.
  const std::vector<const ir::For *> &enclosingLoops() const { return loops_; }
  const std::vector<std::pair<std::string, ir::Expr>> &enclosingLets() const { return lets_; }

  const ir::Function &function_;

private:
  void walk(const ir::StmtNode &stmt, double times);
  void launch(const ir::Launch &launch, double times);
  void withValue(const std::string &name, std::optional<int64_t> value,
                 const std::function<void()> &body);

  std::map<std::string, int64_t> values_;
  std::vector<const ir::For *> loops_;
  std::vector<std::pair<std::string, ir::Expr>> lets_;
  bool approximate_ = false;
};

} // namespace loopc::perf
