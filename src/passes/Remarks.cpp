#include "passes/Remarks.h"

#include "ir/IRVisitor.h"

#include <algorithm>

namespace loopc::passes {

void Remarks::add(Remark remark) {
  Key key{remark.pass, remark.kind, remark.range.begin, remark.range.end, remark.message};
  if (seen_.insert(std::move(key)).second)
    remarks_.push_back(std::move(remark));
}

std::vector<Remark> Remarks::inSourceOrder() const {
  std::vector<Remark> sorted = remarks_;
  std::ranges::stable_sort(sorted, [](const Remark &a, const Remark &b) {
    if (a.range.valid() != b.range.valid())
      return a.range.valid();
    return a.range.begin < b.range.begin;
  });
  return sorted;
}

void RemarkReporter::applied(SourceRange range, std::string message) const {
  report(RemarkKind::Applied, range, std::move(message));
}

void RemarkReporter::declined(SourceRange range, std::string message) const {
  report(RemarkKind::Declined, range, std::move(message));
}

void RemarkReporter::warning(SourceRange range, std::string message) const {
  report(RemarkKind::Warning, range, std::move(message));
}

void RemarkReporter::report(RemarkKind kind, SourceRange range, std::string message) const {
  if (remarks_)
    remarks_->add({pass_, kind, range, std::move(message)});
}

std::string RemarkReporter::programName(const std::string &name) const {
  std::string base = name.substr(0, name.find('.'));
  auto found = programNames_.find(base);
  return found == programNames_.end() ? base : found->second;
}

bool isPassMadeName(const std::string &name) { return name.find('.') != std::string::npos; }

bool choosesPassVersion(const ir::Expr &condition) {
  return std::ranges::any_of(ir::freeVars(condition), isPassMadeName);
}

ir::Stmt RemarkingMutator::visitIfThenElse(const ir::IfThenElse &node, const ir::Stmt &self) {
  bool passVersion = choosesPassVersion(node.cond);
  passVersions_ += passVersion;
  ir::Stmt thenCase = mutate(node.thenCase);
  passVersions_ -= passVersion;
  ir::Stmt elseCase = node.elseCase ? mutate(node.elseCase) : nullptr;
  if (thenCase == node.thenCase && elseCase == node.elseCase)
    return self;
  return std::make_shared<ir::IfThenElse>(node.cond, thenCase, elseCase);
}

std::string countOf(int64_t n, const std::string &noun) {
  if (n == 1)
    return "1 " + noun;
  // "copy" -> "copies"
  if (noun.ends_with("y"))
    return std::to_string(n) + " " + noun.substr(0, noun.size() - 1) + "ies";
  return std::to_string(n) + " " + noun + "s";
}

} // namespace loopc::passes
