#include "support/Diagnostics.h"

#include <algorithm>
#include <sstream>

namespace loopc {

std::string_view SourceFile::line(uint32_t lineNumber) const {
  if (lineNumber == 0 || lineNumber > lineStarts.size())
    return {};
  size_t start = lineStarts[lineNumber - 1];
  size_t end = text.find('\n', start);
  if (end == std::string::npos)
    end = text.size();
  if (end > start && text[end - 1] == '\r')
    --end;
  return std::string_view(text).substr(start, end - start);
}

SourceManager::SourceManager() {
  // File id 0 stands for "no file", so a default SourceLoc never names a file.
  addFile("<unknown>", "");
}

uint32_t SourceManager::addFile(std::string path, std::string text) {
  auto file = std::make_unique<SourceFile>();
  file->path = std::move(path);
  file->text = std::move(text);
  file->lineStarts.push_back(0);
  for (size_t i = 0; i < file->text.size(); ++i)
    if (file->text[i] == '\n')
      file->lineStarts.push_back(i + 1);
  files_.push_back(std::move(file));
  return static_cast<uint32_t>(files_.size() - 1);
}

std::string SourceManager::location(SourceRange range) const {
  if (!range.valid() || range.begin.file >= files_.size())
    return "";
  return files_[range.begin.file]->path + ":" + std::to_string(range.begin.line) + ":" +
         std::to_string(range.begin.col);
}

std::string SourceManager::text(SourceRange range) const {
  if (!range.valid() || range.begin.file >= files_.size() || range.end.file != range.begin.file)
    return "";
  const SourceFile &file = *files_[range.begin.file];
  auto offset = [&](SourceLoc loc) -> size_t {
    return loc.line <= file.lineStarts.size() ? file.lineStarts[loc.line - 1] + loc.col - 1
                                              : file.text.size();
  };
  size_t begin = std::min(offset(range.begin), file.text.size());
  size_t end = std::min(offset(range.end) + 1, file.text.size());
  return begin < end ? file.text.substr(begin, end - begin) : "";
}

void DiagnosticEngine::error(SourceRange range, std::string message) {
  report(Severity::Error, range, std::move(message));
}
void DiagnosticEngine::warning(SourceRange range, std::string message) {
  report(Severity::Warning, range, std::move(message));
}
void DiagnosticEngine::note(SourceRange range, std::string message) {
  report(Severity::Note, range, std::move(message));
}

void DiagnosticEngine::report(Severity severity, SourceRange range, std::string message) {
  if (severity == Severity::Error)
    ++errorCount_;
  diagnostics_.push_back({severity, range, std::move(message)});
}

static const char *severityName(Severity severity) {
  switch (severity) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  case Severity::Remark:
    return "remark";
  }
  return "error";
}

void SourceManager::setImportSite(uint32_t file, SourceRange site) { importSites_[file] = site; }

const SourceRange *SourceManager::importSite(uint32_t file) const {
  auto found = importSites_.find(file);
  return found == importSites_.end() ? nullptr : &found->second;
}

std::string DiagnosticEngine::format(const Diagnostic &diagnostic) const {
  std::string text = formatOne(diagnostic);
  if (diagnostic.severity != Severity::Error && diagnostic.severity != Severity::Warning)
    return text;
  // The chain of imports, nearest first; a file is imported once.
  uint32_t file = diagnostic.range.begin.file;
  for (size_t hops = 0; diagnostic.range.valid() && hops < sources_.fileCount(); ++hops) {
    const SourceRange *site = sources_.importSite(file);
    if (!site)
      break;
    text += formatOne({Severity::Note, *site,
                       "'" + sources_.file(file).path + "' is imported here"});
    file = site->begin.file;
  }
  return text;
}

std::string DiagnosticEngine::formatOne(const Diagnostic &diagnostic) const {
  std::ostringstream out;
  const SourceRange &range = diagnostic.range;
  if (!range.valid() || range.begin.file >= sources_.fileCount()) {
    out << "loopc: " << severityName(diagnostic.severity) << ": " << diagnostic.message << "\n";
    return out.str();
  }
  const SourceFile &file = sources_.file(range.begin.file);
  out << file.path << ":" << range.begin.line << ":" << range.begin.col << ": "
      << severityName(diagnostic.severity) << ": " << diagnostic.message << "\n";
  std::string_view line = file.line(range.begin.line);
  if (line.empty())
    return out.str();
  out << line << "\n";
  // The caret line copies tabs so the marker lines up under the source.
  std::string marker;
  for (uint32_t col = 1; col < range.begin.col && col <= line.size(); ++col)
    marker += line[col - 1] == '\t' ? '\t' : ' ';
  uint32_t lastCol = range.begin.col;
  if (range.end.valid() && range.end.line == range.begin.line && range.end.col > range.begin.col)
    lastCol = std::min<uint32_t>(range.end.col, static_cast<uint32_t>(line.size()));
  marker += '^';
  for (uint32_t col = range.begin.col + 1; col <= lastCol; ++col)
    marker += '~';
  out << marker << "\n";
  return out.str();
}

void DiagnosticEngine::print(std::ostream &out) const {
  for (const Diagnostic &diagnostic : diagnostics_)
    out << format(diagnostic);
}

} // namespace loopc
