#include "support/Diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace loopc {

namespace {
// The widest part of a source line a diagnostic quotes.
const size_t kQuotedColumns = 160;
} // namespace

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

size_t SourceFile::offsetOf(SourceLoc loc) const {
  if (loc.line == 0 || loc.line > lineStarts.size())
    return text.size();
  return std::min(lineStarts[loc.line - 1] + loc.col - 1, text.size());
}

std::string SourceManager::text(SourceRange range) const {
  if (!range.valid() || range.begin.file >= files_.size() || range.end.file != range.begin.file)
    return "";
  const SourceFile &file = *files_[range.begin.file];
  size_t begin = file.offsetOf(range.begin);
  size_t end = std::min(file.offsetOf(range.end) + 1, file.text.size());
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
    text +=
        formatOne({Severity::Note, *site, "'" + sources_.file(file).path + "' is imported here"});
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
  uint32_t lastCol = range.begin.col;
  if (range.end.valid() && range.end.line == range.begin.line && range.end.col > range.begin.col)
    lastCol = std::min<uint32_t>(range.end.col, static_cast<uint32_t>(line.size()));
  // The quoted part of the line: all of it, or a window around the range
  // when it is long (a generated file may hold megabytes on one line).
  size_t first = 0, end = line.size();
  if (line.size() > kQuotedColumns) {
    size_t begin = std::min<size_t>(range.begin.col - 1, line.size());
    first = begin > kQuotedColumns / 3 ? begin - kQuotedColumns / 3 : 0;
    end = std::min(line.size(), first + kQuotedColumns);
  }
  // Control characters escaped (`\x01`), tabs kept; the caret line copies
  // the tabs and the escapes' widths so the marker lines up under the source.
  std::string quoted = first > 0 ? "..." : "", marker = first > 0 ? "   " : "";
  for (size_t i = first; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    std::string shown(1, line[i]);
    if (c != '\t' && (c < 0x20 || c == 0x7f)) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      shown = escaped;
    }
    quoted += shown;
    uint32_t col = static_cast<uint32_t>(i + 1);
    char fill = col < range.begin.col    ? (c == '\t' ? '\t' : ' ')
                : col == range.begin.col ? '^'
                : col <= lastCol         ? '~'
                                         : '\0';
    if (fill == '^')
      marker += "^" + std::string(shown.size() - 1, '~');
    else if (fill != '\0')
      marker += std::string(fill == '\t' ? 1 : shown.size(), fill);
  }
  if (end < line.size())
    quoted += "...";
  if (range.begin.col > line.size())
    marker += '^'; // just past the end of the line
  out << quoted << "\n" << marker << "\n";
  return out.str();
}

void DiagnosticEngine::print(std::ostream &out) const {
  for (const Diagnostic &diagnostic : diagnostics_)
    out << format(diagnostic);
}

} // namespace loopc
