// One diagnostics engine for every stage: syntax, semantic and run-time errors
// are all reported as `file:line:col: error: message`, followed by the source
// line and a caret under the offending range.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace loopc {

// A position in a loaded source file. `file` indexes SourceManager; lines and
// columns are 1-based. A default-constructed location is "unknown".
struct SourceLoc {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  bool valid() const { return line != 0; }
  auto operator<=>(const SourceLoc &) const = default;
};

struct SourceRange {
  SourceLoc begin;
  SourceLoc end; // inclusive: the last character of the range
  bool valid() const { return begin.valid(); }
};

struct SourceFile {
  std::string path;
  std::string text;
  std::vector<size_t> lineStarts; // offsets of the first character of each line
  std::string_view line(uint32_t lineNumber) const;
  // The offset in `text` of `loc`'s character (the end of the text past it).
  size_t offsetOf(SourceLoc loc) const;
};

// Owns the text of every file read during a compilation (the main file and
// its imports), so diagnostics can quote source lines.
class SourceManager {
public:
  SourceManager();
  // Returns the file id; the text is copied.
  uint32_t addFile(std::string path, std::string text);
  const SourceFile &file(uint32_t id) const { return *files_[id]; }
  size_t fileCount() const { return files_.size(); }
  // "path:line:col" of the range's start; "" when it names no loaded file.
  std::string location(SourceRange range) const;
  // The source text the range covers; "" when it names no loaded file.
  std::string text(SourceRange range) const;
  // Where a file was imported (the import declaration in its importer), so a
  // diagnostic in it can show the chain of imports that led there.
  void setImportSite(uint32_t file, SourceRange site);
  const SourceRange *importSite(uint32_t file) const;

private:
  std::vector<std::unique_ptr<SourceFile>> files_;
  std::map<uint32_t, SourceRange> importSites_;
};

// Remark: what an optimization did or declined (`--remarks`).
enum class Severity { Error, Warning, Note, Remark };

struct Diagnostic {
  Severity severity;
  SourceRange range;
  std::string message;
};

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceManager &sources) : sources_(sources) {}

  void error(SourceRange range, std::string message);
  void warning(SourceRange range, std::string message);
  void note(SourceRange range, std::string message);

  bool hasErrors() const { return errorCount_ > 0; }
  unsigned errorCount() const { return errorCount_; }
  const std::vector<Diagnostic> &diagnostics() const { return diagnostics_; }

  // Renders one diagnostic: location, severity, message, source line, caret;
  // for an error or a warning in an imported file, a note at each import
  // that led to it.
  std::string format(const Diagnostic &diagnostic) const;
  // Writes every diagnostic collected so far, in order.
  void print(std::ostream &out) const;

private:
  void report(Severity severity, SourceRange range, std::string message);
  std::string formatOne(const Diagnostic &diagnostic) const;

  const SourceManager &sources_;
  std::vector<Diagnostic> diagnostics_;
  unsigned errorCount_ = 0;
};

} // namespace loopc
