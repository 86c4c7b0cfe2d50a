// Optimization remarks (after LLVM's -Rpass and -Rpass-missed): what an
// optimization did to a loop nest, or why it left the nest alone, in one line
// located at the .loop source, and warnings for performance cliffs a program
// can avoid. The pipeline hands each pass a RemarkReporter naming the pass;
// PipelineOptions::remarks collects what they report (`loopc explain
// --remarks`). Passes run alone (tests) report nowhere.
#pragma once

#include "ir/IR.h"
#include "ir/IRVisitor.h"
#include "support/Diagnostics.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace loopc::passes {

enum class RemarkKind {
  Applied,  // a transformation the pass made
  Declined, // a transformation the pass considered and did not make, with why
  Warning,  // a performance cliff the program could avoid (uncoalesced access)
};

struct Remark {
  std::string pass;
  RemarkKind kind = RemarkKind::Applied;
  SourceRange range; // the parfor, redomap or access it is about
  std::string message;
};

// The remarks of one compilation. A pass may look at one loop several times
// (simplify runs twice, stage_shared stages both sides of a uniform branch,
// a host's choice between two versions of a nest keeps both), so a remark
// equal to one already reported is dropped: each is reported once, and the
// order is the order the pipeline first reported them in, which is the same
// every run.
class Remarks {
public:
  void add(Remark remark);
  const std::vector<Remark> &inPipelineOrder() const { return remarks_; }
  // By position in the source (file, line, column); remarks at one position
  // in pipeline order, those with no position last.
  std::vector<Remark> inSourceOrder() const;

private:
  using Key = std::tuple<std::string, RemarkKind, SourceLoc, SourceLoc, std::string>;
  std::vector<Remark> remarks_;
  std::set<Key> seen_;
};

// What one pass reports into: its name and the collector, if any.
class RemarkReporter {
public:
  // Reports nowhere (a pass run alone).
  RemarkReporter() = default;
  // `programNames`: the Function's (ir::Function::programNames), by which
  // remarks name loops as the program does.
  RemarkReporter(Remarks *remarks, std::string pass,
                 std::map<std::string, std::string> programNames = {})
      : remarks_(remarks), pass_(std::move(pass)), programNames_(std::move(programNames)) {}

  // Whether the remarks are kept: a pass may skip working out what it would
  // say when they are not.
  bool enabled() const { return remarks_ != nullptr; }

  void applied(SourceRange range, std::string message) const;
  void declined(SourceRange range, std::string message) const;
  void warning(SourceRange range, std::string message) const;

  // The program's name of a loop variable, let or array of the IR: `c` for
  // the lowering's `c_2`, and for a pass's copy or part of one (`j.c0`,
  // `acc.x1y0`: a pass names them after the original, a '.' and its suffix).
  std::string programName(const std::string &name) const;

private:
  void report(RemarkKind kind, SourceRange range, std::string message) const;

  Remarks *remarks_ = nullptr;
  std::string pass_;
  std::map<std::string, std::string> programNames_;
};

// Whether `name` is one a pass made for its own code (`i.flat`,
// `acc.partials`): passes join a name's parts with '.', which no program
// identifier has. Remarks about what a pass made (the versions
// split_reductions adds) say nothing in the program's terms and are left out.
bool isPassMadeName(const std::string &name);

// Whether a branch picks between versions of code a pass made by a
// run-time test of the pass's own names (split_reductions' `if (i.parts >=
// 2)`): what later passes do to its first version is told by that pass's
// remark, and said again would contradict the remarks about the program's
// own version.
bool choosesPassVersion(const ir::Expr &condition);

// A pass's mutator that reports remarks, silent inside the versions a pass
// made (choosesPassVersion): it reports through reporter().
class RemarkingMutator : public ir::IRMutator {
public:
  explicit RemarkingMutator(const RemarkReporter &remarks) : remarks_(remarks) {}

protected:
  ir::Stmt visitIfThenElse(const ir::IfThenElse &node, const ir::Stmt &self) override;
  // Where the node being visited reports: nowhere inside a pass's version.
  const RemarkReporter &reporter() const { return passVersions_ > 0 ? unreported_ : remarks_; }

private:
  const RemarkReporter &remarks_;
  const RemarkReporter unreported_;
  int passVersions_ = 0; // versions of a pass's own around the node
};

// `n` followed by `noun`, plural unless n is 1: "1 read", "4 reads", "2
// copies".
std::string countOf(int64_t n, const std::string &noun);

} // namespace loopc::passes
