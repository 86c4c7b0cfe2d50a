// The REPL session (see Repl.h). The definitions are kept as text and the
// session's program is that text put together, imports first (the grammar
// wants them there), each definition starting on a line of its own at the
// column it had where it was typed. A diagnostic is then moved back to the
// input its definition came from by a line offset alone.
#include "driver/Repl.h"

#include "codegen/CpuJit.h"
#include "codegen/CpuLibrary.h"
#include "codegen/NvptxTarget.h"
#include "driver/BenchCommand.h"
#include "driver/Cli.h"
#include "driver/Engines.h"
#include "driver/ExplainCommand.h"
#include "driver/RemarksOutput.h"
#include "driver/ReplValues.h"
#include "driver/RunCommand.h"
#include "frontend/Loader.h"
#include "loopc/generated.h"
#include "lower/Lower.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"
#include "perf/GpuDevices.h"
#include "sema/Sema.h"
#include "support/Interrupt.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

namespace loopc::driver {

namespace {

// The top-level structure of program text, found without parsing: enough to
// tell whether a definition is complete and to split definitions apart
// before they can be parsed (a fn may use one defined earlier).
struct TextScan {
  std::vector<std::pair<size_t, size_t>> spans; // [begin, end) of each definition
  int depth = 0;                                // brackets open at the end
  bool inBlockComment = false;                  // a /* comment open at the end
  bool unmatchedCloser = false; // a ), ] or } that closes no bracket, or another kind
  char lastSignificant = 0;     // outside comments and spaces
};

char openerOf(char closer) { return closer == ')' ? '(' : closer == ']' ? '[' : '{'; }

TextScan scanText(const std::string &text) {
  TextScan scan;
  constexpr size_t kNone = std::string::npos;
  size_t begin = kNone;        // where the definition being scanned starts
  size_t commentBegin = kNone; // where the last /* comment starts
  std::string open;            // the brackets open, innermost last
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    char next = i + 1 < text.size() ? text[i + 1] : 0;
    if (scan.inBlockComment) {
      if (c == '*' && next == '/') {
        scan.inBlockComment = false;
        ++i;
      }
      continue;
    }
    if (c == '/' && next == '/') {
      i = std::min(text.find('\n', i), text.size());
      continue;
    }
    if (c == '/' && next == '*') {
      scan.inBlockComment = true;
      commentBegin = i;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)))
      continue;
    if (begin == kNone)
      begin = i;
    scan.lastSignificant = c;
    if (c == '"') { // a string ends at its quote or, unterminated, at the line's end
      size_t close = text.find_first_of("\"\n", i + 1);
      i = close == std::string::npos ? text.size() : text[close] == '"' ? close : close - 1;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      open.push_back(c);
    } else if (c == ')' || c == ']' || c == '}') {
      // A closer that matches nothing is left out of the nesting: it opens
      // nothing, so it must not keep the input waiting for more lines.
      if (!open.empty() && open.back() == openerOf(c))
        open.pop_back();
      else
        scan.unmatchedCloser = true;
    }
    if (open.empty() && (c == '}' || c == ';')) {
      scan.spans.emplace_back(begin, i + 1);
      begin = kNone;
    }
  }
  scan.depth = static_cast<int>(open.size());
  if (begin == kNone && scan.inBlockComment)
    begin = commentBegin; // an unterminated comment alone is an input, for the parser to report
  if (begin != kNone) {
    size_t end = text.find_last_not_of(" \t\r\n") + 1;
    scan.spans.emplace_back(begin, std::max(end, begin + 1));
  }
  return scan;
}

// Whether typed text is a whole definition: brackets closed and the last
// thing a `}` or the `;` of an import; or text that cannot become one, as
// a closing bracket matching none makes it (its error is reported at once,
// and the next lines are read as they come, commands included).
bool isComplete(const TextScan &scan) {
  if (scan.inBlockComment)
    return false;
  return scan.unmatchedCloser ||
         (scan.depth == 0 && (scan.lastSignificant == 0 || scan.lastSignificant == '}' ||
                              scan.lastSignificant == ';'));
}

bool isWordCharacter(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The words a definition starts with, up to the first other character:
// "assoc fn max" or "kernel saxpy".
std::vector<std::string> leadingWords(const std::string &text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size() && words.size() < 3) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text.compare(i, 2, "//") == 0) {
      i = std::min(text.find('\n', i), text.size());
    } else if (text.compare(i, 2, "/*") == 0) {
      i = std::min(text.find("*/", i + 2), text.size()) + 2;
    } else if (isWordCharacter(text[i])) {
      size_t end = i;
      while (end < text.size() && isWordCharacter(text[end]))
        ++end;
      words.push_back(text.substr(i, end - i));
      i = end;
    } else {
      break;
    }
  }
  return words;
}

void nameDefinition(ReplDefinition &definition) {
  std::vector<std::string> words = leadingWords(definition.text);
  auto word = [&](size_t index) { return index < words.size() ? words[index] : ""; };
  using Kind = ReplDefinition::Kind;
  if (word(0) == "import") {
    definition.kind = Kind::Import;
    definition.name = definition.text;
  } else if (word(0) == "kernel") {
    definition.kind = Kind::Kernel;
    definition.name = word(1);
  } else if (word(0) == "unsafe" && word(1) == "kernel") {
    definition.kind = Kind::Kernel;
    definition.name = word(2);
  } else if (word(0) == "fn") {
    definition.kind = Kind::Fn;
    definition.name = word(1);
  } else if (word(0) == "assoc" && word(1) == "fn") {
    definition.kind = Kind::Fn;
    definition.name = word(2);
  }
}

std::vector<ReplDefinition> splitDefinitions(std::shared_ptr<const std::string> text,
                                             const std::string &origin) {
  std::vector<ReplDefinition> definitions;
  for (auto [begin, end] : scanText(*text).spans) {
    ReplDefinition definition;
    definition.text = text->substr(begin, end - begin);
    definition.origin = origin;
    definition.originText = text;
    definition.originLine =
        1 + static_cast<uint32_t>(std::count(text->begin(), text->begin() + begin, '\n'));
    size_t lineStart = text->rfind('\n', begin == 0 ? 0 : begin - 1);
    lineStart = begin == 0 || lineStart == std::string::npos ? 0 : lineStart + 1;
    definition.originColumn = static_cast<uint32_t>(begin - lineStart + 1);
    nameDefinition(definition);
    definitions.push_back(std::move(definition));
  }
  return definitions;
}

uint32_t lineCount(const std::string &text) {
  return 1 + static_cast<uint32_t>(std::ranges::count(text, '\n'));
}

std::string kindName(ReplDefinition::Kind kind) {
  return kind == ReplDefinition::Kind::Kernel ? "kernel" : "fn";
}

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos)
    return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// The file of `files` (loaded with :load) that `import` names, or "" when
// it names none of them.
std::string loadedFileImported(const ReplDefinition &import,
                               const std::vector<std::string> &files) {
  size_t open = import.text.find('"');
  size_t close = open == std::string::npos ? open : import.text.find('"', open + 1);
  if (close == std::string::npos)
    return ""; // a module of the standard library
  std::string identity = fileIdentity(import.text.substr(open + 1, close - open - 1));
  auto found = std::ranges::find_if(
      files, [&](const std::string &file) { return fileIdentity(file) == identity; });
  return found == files.end() ? "" : *found;
}

// The definitions put together into the session's program text, and the
// line each starts on.
struct ProgramText {
  std::string text;
  std::vector<uint32_t> lines;
};

ProgramText assemble(const std::vector<ReplDefinition> &definitions) {
  ProgramText program;
  uint32_t line = 1;
  for (const ReplDefinition &definition : definitions) {
    program.lines.push_back(line);
    program.text += std::string(definition.originColumn - 1, ' ') + definition.text + "\n";
    line += lineCount(definition.text);
  }
  return program;
}

// The index of the definition holding `range` in the session's program,
// or none when it lies elsewhere (imported modules, no place).
std::optional<size_t> definitionAt(const SourceRange &range, const std::vector<uint32_t> &lines,
                                   uint32_t mainFile) {
  if (!range.valid() || range.begin.file != mainFile)
    return std::nullopt;
  auto after = std::ranges::upper_bound(lines, range.begin.line);
  if (after == lines.begin())
    return std::nullopt;
  return after - lines.begin() - 1;
}

// The name a diagnostic gives the input `definition` came from: the file
// loaded, `<input>` for the input being added (`currentInput`), `<input N>`
// for an earlier one.
std::string originName(const ReplDefinition &definition, uint32_t currentInput) {
  if (definition.input == 0 || definition.input == currentInput)
    return definition.origin;
  return "<input " + std::to_string(definition.input) + ">";
}

// Renders a diagnostic of the session's program as if reported in the input
// its definition came from; diagnostics elsewhere (imported modules, no
// place) are rendered as they are.
std::string formatDiagnostic(const Diagnostic &diagnostic, const Session &session,
                             const std::vector<ReplDefinition> &definitions,
                             const std::vector<uint32_t> &lines, uint32_t mainFile,
                             uint32_t currentInput) {
  const SourceRange &range = diagnostic.range;
  std::optional<size_t> index = definitionAt(range, lines, mainFile);
  if (!index)
    return session.diagnostics.format(diagnostic);
  const ReplDefinition &definition = definitions[*index];
  uint32_t first = lines[*index];
  uint32_t last = first + lineCount(definition.text) - 1;

  SourceManager shown;
  uint32_t file = shown.addFile(originName(definition, currentInput), *definition.originText);
  auto move = [&](SourceLoc loc) {
    loc.file = file;
    loc.line = loc.line - first + definition.originLine;
    return loc;
  };
  Diagnostic moved = diagnostic;
  moved.range.begin = move(range.begin);
  bool endInside = range.end.valid() && range.end.file == mainFile && range.end.line >= first &&
                   range.end.line <= last;
  moved.range.end = endInside ? move(range.end) : moved.range.begin;
  return DiagnosticEngine(shown).format(moved);
}

// An error at the name of `definition`, in the input it was typed in.
std::string formatAtName(const ReplDefinition &definition, const std::string &message) {
  // The name, after the keyword (`kernel`, `fn`, `assoc`).
  std::vector<std::string> words = leadingWords(definition.text);
  size_t offset =
      definition.name.empty() || words.empty()
          ? 0
          : definition.text.find(definition.name, definition.text.find(words[0]) + words[0].size());
  if (offset == std::string::npos)
    offset = 0;
  std::string_view before(definition.text.data(), offset);
  auto newlines = static_cast<uint32_t>(std::ranges::count(before, '\n'));
  size_t lineStart = before.rfind('\n');
  uint32_t column = lineStart == std::string_view::npos
                        ? definition.originColumn + static_cast<uint32_t>(offset)
                        : static_cast<uint32_t>(offset - lineStart);
  SourceManager shown;
  SourceLoc begin{shown.addFile(definition.origin, *definition.originText),
                  definition.originLine + newlines, column};
  SourceLoc end = begin;
  end.col += static_cast<uint32_t>(std::max<size_t>(definition.name.size(), 1) - 1);
  return DiagnosticEngine(shown).format({Severity::Error, {begin, end}, message});
}

// Parses a command's arguments as the command line's are parsed (CLI11),
// printing --help and usage errors; false when the command should not run.
bool parseArguments(CLI::App &parser, const std::string &arguments, std::ostream &out,
                    std::ostream &err) {
  try {
    parser.parse(arguments, false);
    return true;
  } catch (const CLI::CallForHelp &) {
    out << parser.help();
  } catch (const CLI::ParseError &error) {
    err << "loopc: error: " << parser.get_name() << ": " << error.what() << "\n";
  }
  return false;
}

constexpr const char *kHelp =
    R"(Type kernel, fn, assoc fn and import definitions to add them to the session;
a definition continues over lines while its brackets are open. Defining a
kernel or fn again replaces it. Anything else is evaluated and printed:
  1 + 2, sqrt(2.0), redomap(+, 0.0, i in 0..n) A[i][i]
                          an expression of the language over the values
  let A = iota(f32, [3, 3])
                          binds a value; also zeros, ones, random(T, [..],
                          seed=S), linspace(T, lo, hi, n), load("a.npy")
  let C = matmul(A, B)    calls a kernel: its in and inout arguments, its
                          out parameters the result (let (C, D) = k(...))
  A, A[0], A[0:2, 1:3]    a value, or a part of an array
  save(A, "a.npy")        writes a value to a .npy file
Commands (KERNEL defaults to the last one defined; each takes --help):
  :run [KERNEL] [--set N=V]... [--in A=F.npy]... [--seed S] [--device D]
       [--skip-pass P]... [--pass-param P=V]... [--unsafe] [--remarks]
                          run a kernel and summarize its outputs
  :time [KERNEL] [...] [--repeat N]
                          the median time of N runs (after one warm-up run)
  :explain [KERNEL] [--after PASS] [--target gpu|cpu] [--remarks] [--unsafe]
                          the Loop IR after each pass (or after PASS), or
                          what the optimizations did and declined
  :ptx [KERNEL] [--gpu ARCH]
                          the PTX the kernel compiles to
  :llvm [KERNEL] [--target cpu|gpu] [--gpu ARCH] [--no-opt]
                          the LLVM IR the kernel compiles to
  :device [interp|cpu|gpu|gpu-on-cpu]
                          the device runs use (default: the best available)
  :load FILE              add the definitions of a .loop file
  :list                   the definitions so far
  :who                    the values so far, with their types
  :print NAME [--full]    a value, every element with --full
  :reset                  forget every definition and value
  :help                   this text
  :quit                   leave (so does Ctrl-D)
)";

} // namespace

std::optional<std::string> StreamLineSource::readLine(const std::string &prompt) {
  if (prompts_)
    *prompts_ << prompt << std::flush;
  std::string line;
  if (!std::getline(in_, line))
    return std::nullopt;
  return line;
}

Repl::Repl(std::ostream &out, std::ostream &err) : out_(out), err_(err) {}

Repl::~Repl() = default;

std::string Repl::prompt() const { return pending_.empty() ? "loop> " : "...> "; }

void Repl::run(LineSource &source) {
  std::string input; // the lines of the input going on
  for (;;) {
    std::optional<std::string> line = source.readLine(prompt());
    // Ctrl-C at the prompt drops the line and a definition going on.
    if (clearInterrupt()) {
      pending_.clear();
      input.clear();
      out_ << "\n";
      continue;
    }
    if (!line)
      break;
    uint32_t failuresBefore = failures_;
    if (!trim(*line).empty() || !pending_.empty())
      input += (input.empty() ? "" : "\n") + *line;
    bool goOn = handleLine(*line);
    if (pending_.empty() && !input.empty()) {
      source.remember(input);
      input.clear();
    }
    // A run it stopped has reported it; the next input starts afresh.
    clearInterrupt();
    if (!goOn)
      return;
    if (stopAtFailure_ && failures_ > failuresBefore) {
      err_ << "loopc: the session stops at this failure (--keep-going goes on)\n";
      return;
    }
  }
  finishInput();
}

bool Repl::clearInterrupt() {
  loopc_cpu_cancel_launches(0);
  return takeInterrupt();
}

void Repl::interrupt() {
  requestInterrupt();
  loopc_cpu_cancel_launches(1);
}

bool Repl::handleLine(const std::string &line) {
  std::string trimmed = trim(line);
  if (pending_.empty()) {
    if (trimmed.empty())
      return true;
    if (trimmed.front() == ':')
      return handleCommand(trimmed);
  }
  // An expression or `let` ends with its line once its brackets close.
  if (std::string input = trim(pending_ + line); ReplValues::evaluates(input)) {
    TextScan scan = scanText(input);
    if (scan.depth > 0 || scan.inBlockComment) {
      pending_ += line + "\n";
      return true;
    }
    pending_.clear();
    if (!values_.evaluate(input, replProgram(), device_))
      ++failures_;
    return true;
  }
  // A blank line ends text whose brackets are closed but which lacks its
  // final `}` or `;`, so that a typo cannot keep the prompt waiting.
  if (trimmed.empty()) {
    TextScan scan = scanText(pending_);
    if (scan.depth > 0 || scan.inBlockComment) {
      pending_ += "\n";
      return true;
    }
  } else {
    pending_ += line + "\n";
    if (!isComplete(scanText(pending_)))
      return true;
  }
  std::string text = std::move(pending_);
  pending_.clear();
  failures_ += !addDefinitions(std::move(text), "<input>");
  return true;
}

void Repl::finishInput() {
  if (pending_.empty())
    return;
  std::string text = std::move(pending_);
  pending_.clear();
  failures_ += !addDefinitions(std::move(text), "<input>");
}

bool Repl::addDefinitions(std::string text, const std::string &origin) {
  using Kind = ReplDefinition::Kind;
  auto shared = std::make_shared<const std::string>(std::move(text));
  std::vector<ReplDefinition> added = splitDefinitions(shared, origin);
  if (added.empty())
    return true;
  uint32_t input = origin == "<input>" ? ++inputsTyped_ : 0;
  for (ReplDefinition &definition : added)
    definition.input = input;
  auto definedBefore = [&](const ReplDefinition &definition) {
    return std::ranges::any_of(definitions_, [&](const ReplDefinition &old) {
      return old.kind == definition.kind && old.name == definition.name;
    });
  };

  // Imports first, as the grammar wants; a kernel or fn of a name defined
  // before replaces the old one; an import made before is not repeated.
  std::vector<ReplDefinition> candidate;
  for (const ReplDefinition &old : definitions_) {
    bool replaced = old.kind != Kind::Import && std::ranges::any_of(added, [&](const auto &next) {
                      return next.kind == old.kind && next.name == old.name;
                    });
    if (!replaced)
      candidate.push_back(old);
  }
  // Every file is loaded once: an import of a file loaded with :load adds
  // nothing (its definitions are the session's), said for a new import and
  // for an old one that loading the file makes redundant.
  LoadOptions options;
  auto include = [&](const std::string &file) {
    if (file != "<input>" &&
        std::ranges::find(options.includedFiles, file) == options.includedFiles.end())
      options.includedFiles.push_back(file);
  };
  for (const ReplDefinition &old : candidate)
    include(old.origin);
  include(origin);
  bool loadedBefore = std::ranges::any_of(
      definitions_, [&](const ReplDefinition &old) { return old.origin == origin; });
  std::vector<std::string> messages;
  if (origin != "<input>" && !loadedBefore)
    for (const ReplDefinition &old : candidate)
      if (old.kind == Kind::Import && !loadedFileImported(old, {origin}).empty())
        messages.push_back(trim(old.text) + " adds nothing now: '" + origin + "' is loaded");
  for (const ReplDefinition &definition : added) {
    if (definition.kind == Kind::Import && definedBefore(definition))
      continue;
    if (definition.kind == Kind::Import) {
      std::string loaded = loadedFileImported(definition, options.includedFiles);
      messages.push_back(trim(definition.text) +
                         (loaded.empty() ? "" : " adds nothing: '" + loaded + "' is loaded"));
    } else if (definition.kind != Kind::Unknown)
      messages.push_back((definedBefore(definition) ? "replaced " : "defined ") +
                         kindName(definition.kind) + " '" + definition.name + "'");
    candidate.push_back(definition);
  }
  std::ranges::stable_partition(
      candidate, [](const auto &definition) { return definition.kind == Kind::Import; });

  ProgramText program = assemble(candidate);
  auto session = std::make_unique<Session>();
  uint32_t mainFile = static_cast<uint32_t>(session->sources.fileCount());
  session->program = loadProgramFromText("<session>", std::move(program.text), session->sources,
                                         session->diagnostics, options);
  if (session->program && !checkProgramAndSchedules(*session->program, session->diagnostics))
    session->program.reset();
  if (!session->program || session->diagnostics.hasErrors()) {
    reportRefusal(*session, candidate, program.lines, mainFile, shared, input);
    return false;
  }
  for (const Diagnostic &diagnostic : session->diagnostics.diagnostics())
    err_ << formatDiagnostic(diagnostic, *session, candidate, program.lines, mainFile, input);

  definitions_ = std::move(candidate);
  definitionLines_ = std::move(program.lines);
  session_ = std::move(session);
  mainFile_ = mainFile;
  for (const std::string &message : messages)
    out_ << message << "\n";
  return true;
}

void Repl::reportRefusal(const Session &session, const std::vector<ReplDefinition> &candidate,
                         const std::vector<uint32_t> &lines, uint32_t mainFile,
                         const std::shared_ptr<const std::string> &input,
                         uint32_t inputNumber) const {
  using Kind = ReplDefinition::Kind;
  auto isNew = [&](const ReplDefinition &definition) { return definition.originText == input; };
  // The earlier definitions with errors: this input breaks them, which the
  // errors, quoting them where they were typed, would not say.
  std::vector<std::string> brokenNames;
  for (const Diagnostic &diagnostic : session.diagnostics.diagnostics()) {
    std::optional<size_t> index = definitionAt(diagnostic.range, lines, mainFile);
    if (diagnostic.severity != Severity::Error || !index || isNew(candidate[*index]))
      continue;
    const ReplDefinition &definition = candidate[*index];
    std::string name = kindName(definition.kind) + " '" + definition.name + "'";
    if (std::ranges::find(brokenNames, name) == brokenNames.end())
      brokenNames.push_back(name);
  }
  auto firstNew = std::ranges::find_if(candidate, isNew);
  if (!brokenNames.empty() && firstNew != candidate.end()) {
    std::string broken;
    for (const std::string &name : brokenNames)
      broken += (broken.empty() ? "" : ", ") + name;
    const ReplDefinition *replacing = nullptr;
    std::string replaced;
    for (const ReplDefinition &definition : candidate)
      if (isNew(definition) && definition.kind != Kind::Import &&
          std::ranges::any_of(definitions_, [&](const ReplDefinition &old) {
            return old.kind == definition.kind && old.name == definition.name;
          })) {
        replacing = replacing ? replacing : &definition;
        replaced += (replaced.empty() ? "" : ", ") + kindName(definition.kind) + " '" +
                    definition.name + "'";
      }
    const ReplDefinition &first = replacing ? *replacing : *firstNew;
    err_ << formatAtName(
        first, (replacing ? "the new definition of " + replaced : std::string("this input")) +
                   " is refused: it breaks " + broken + ", defined before (the errors follow)" +
                   (replacing ? "; the old definition stays" : ""));
  }
  for (const Diagnostic &diagnostic : session.diagnostics.diagnostics())
    err_ << formatDiagnostic(diagnostic, session, candidate, lines, mainFile, inputNumber);
}

bool Repl::loadFile(const std::string &path) {
  Expected<std::string> text = readSourceFile(path);
  if (!text) {
    err_ << "loopc: error: cannot read '" << path << "': " << text.error().message << "\n";
    ++failures_;
    return false;
  }
  bool added = addDefinitions(*text, path);
  failures_ += !added;
  return added;
}

bool Repl::handleCommand(const std::string &line) {
  size_t split = line.find_first_of(" \t");
  std::string command = line.substr(0, split);
  std::string arguments = split == std::string::npos ? "" : trim(line.substr(split));
  if (command == ":quit" || command == ":q" || command == ":exit")
    return false;
  if (command == ":run" || command == ":time")
    runCommand(arguments, command == ":time");
  else if (command == ":explain")
    explainCommand(arguments);
  else if (command == ":ptx" || command == ":llvm")
    codeCommand(arguments, command == ":ptx");
  else if (command == ":device")
    deviceCommand(arguments);
  else if (command == ":load" && !arguments.empty())
    loadFile(arguments);
  else if (command == ":load") {
    err_ << "loopc: error: :load needs a FILE\n";
    ++failures_;
  } else if (command == ":list")
    listCommand();
  else if (command == ":who")
    values_.list();
  else if (command == ":print")
    printCommand(arguments);
  else if (command == ":reset") {
    definitions_.clear();
    definitionLines_.clear();
    session_.reset();
    values_.clear();
    out_ << "every definition and value forgotten\n";
  } else if (command == ":help")
    printHelp();
  else {
    err_ << "loopc: error: unknown command '" << command << "' (:help lists the commands)\n";
    ++failures_;
  }
  return true;
}

void Repl::printCommand(const std::string &arguments) {
  std::string name;
  bool full = false;
  CLI::App parser{"Print a value of the session", ":print"};
  parser.add_option("NAME", name, "The value")->required();
  parser.add_flag("--full", full, "Every element, not the corners of a large array");
  if (!parseArguments(parser, arguments, out_, err_) || !values_.print(name, full))
    ++failures_;
}

ReplProgram Repl::replProgram() const {
  ReplProgram program;
  program.definitions = assemble(definitions_).text;
  for (const ReplDefinition &definition : definitions_)
    if (definition.origin != "<input>" &&
        std::ranges::find(program.options.includedFiles, definition.origin) ==
            program.options.includedFiles.end())
      program.options.includedFiles.push_back(definition.origin);
  return program;
}

const Program *Repl::program() {
  if (session_)
    return session_->program.get();
  err_ << "loopc: error: nothing is defined yet: type a kernel or :load a file\n";
  ++failures_;
  return nullptr;
}

Expected<const KernelDecl *> Repl::kernelNamed(const std::string &name) {
  const Program *program = this->program();
  if (!program)
    return makeError("no program");
  return selectKernel(*program, name);
}

void Repl::report(const Error &error) {
  ++failures_;
  Diagnostic diagnostic{Severity::Error, error.range, error.message};
  if (session_)
    err_ << formatDiagnostic(diagnostic, *session_, definitions_, definitionLines_, mainFile_, 0);
  else
    err_ << "loopc: error: " << error.message << "\n";
}

void Repl::printRemarks(std::ostream &out, const std::vector<passes::Remark> &remarks) const {
  for (const passes::Remark &remark : remarks)
    out << formatDiagnostic(remarkDiagnostic(remark), *session_, definitions_, definitionLines_,
                            mainFile_, 0);
}

void Repl::runCommand(const std::string &arguments, bool timing) {
  RunTargetOptions target;
  RunOutputOptions runOptions;     // :run takes what `loopc run` does with a run
  BenchOutputOptions benchOptions; // :time what `loopc bench` does
  CLI::App parser{timing ? "Time a kernel as loopc bench does: the median of N runs from the "
                           "same inputs, with GFLOP/s, GB/s and the model's prediction"
                         : "Run a kernel and summarize its outputs",
                  timing ? ":time" : ":run"};
  target.addTo(parser, timing ? "time" : "run", true, CommandForm::Repl);
  if (timing)
    benchOptions.addTo(parser);
  else
    runOptions.addTo(parser);
  if (!parseArguments(parser, arguments, out_, err_)) {
    ++failures_;
    return;
  }
  if (!program())
    return;
  if (target.device.empty())
    target.device = device_;
  auto run = prepareRunIn(*session_, target, err_);
  if (!run) {
    report(run.error());
    return;
  }
  if (target.remarks) {
    const passes::PipelineOptions *pipeline = compilingPipeline(*run->engine);
    if (!pipeline) {
      err_ << "loopc: note: --remarks: the " << run->engine->name()
           << " engine runs no optimization passes\n";
    } else if (auto found =
                   kernelRemarks(*session_->program, *run->kernel, *pipeline, run->args.sizes);
               !found) {
      report(found.error());
      return;
    } else {
      printRemarks(err_, *found);
    }
  }
  if (timing) {
    if (Status timed = benchPreparedRun(benchOptions, *run, target, out_); !timed)
      report(timed.error());
    return;
  }
  std::vector<PathUse> inputFiles = sourceFileUses(session_->sources);
  for (const std::string &input : target.arguments.inputs)
    if (auto assignment = splitAssignment(input, "--in"))
      inputFiles.push_back({parseInputFile(assignment->second).path, "--in " + input});
  auto matched = runBoundKernel(runOptions, *session_->program, *run->kernel, run->args,
                                *run->engine, inputFiles, out_, ":time");
  if (!matched)
    report(matched.error());
  else if (!*matched)
    ++failures_;
}

void Repl::explainCommand(const std::string &arguments) {
  ExplainOptions options;
  CLI::App parser{"Print a kernel's Loop IR after each compiler pass", ":explain"};
  options.addTo(parser, CommandForm::Repl);
  if (!parseArguments(parser, arguments, out_, err_)) {
    ++failures_;
    return;
  }
  if (!program())
    return;
  auto printInputRemarks = [&](const std::vector<passes::Remark> &remarks) {
    printRemarks(out_, remarks);
  };
  if (Status explained = explainAsOptionsSay(out_, *session_->program, options, printInputRemarks);
      !explained)
    report(explained.error());
}

void Repl::codeCommand(const std::string &arguments, bool ptx) {
  std::string kernelName;
  std::string target = ptx ? "gpu" : "cpu";
  std::string gpu = codegen::kDefaultGpu;
  bool noOptimize = false;
  CLI::App parser{ptx ? "Print the PTX a kernel compiles to"
                      : "Print the LLVM IR a kernel compiles to",
                  ptx ? ":ptx" : ":llvm"};
  parser.add_option("KERNEL", kernelName, "The kernel (default: the last one defined)");
  parser.add_option("--gpu", gpu, "The GPU architecture (default: sm_80)");
  if (!ptx) {
    parser.add_option("--target", target, "cpu or gpu (default: cpu)")
        ->check(CLI::IsMember({"cpu", "gpu"}));
    parser.add_flag("--no-opt", noOptimize, "The LLVM IR before optimization");
  }
  PassChoiceOptions passChoices;
  passChoices.addTo(parser);
  if (!parseArguments(parser, arguments, out_, err_))
    return;
  auto kernel = kernelNamed(kernelName);
  if (!kernel) {
    if (session_)
      report(kernel.error());
    return;
  }
  auto choices = passChoices.choicesFor(*session_->program);
  if (!choices) {
    report(choices.error());
    return;
  }
  passes::PipelineOptions pipeline;
  pipeline.target = pipelineTargetNamed(target);
  pipeline.choices = *choices;
  codegen::targetCpu(pipeline);
  pipeline.computeCapability = codegen::computeCapabilityOf(gpu);
  pipeline.multiprocessors = perf::typicalGpuDeviceFor(gpu).multiprocessors;
  Expected<ir::Function> function =
      passes::runPipeline(ir::lowerKernel(*session_->program, **kernel), pipeline);
  if (!function) {
    report(function.error());
    return;
  }
  Expected<std::string> text = ptx ? codegen::compileToPtx(*function, gpu)
                               : target == "gpu"
                                   ? codegen::nvptxLlvmText(*function, gpu, !noOptimize)
                                   : codegen::cpuLlvmText(*function, !noOptimize);
  if (!text) {
    report(text.error());
    return;
  }
  out_ << *text;
}

void Repl::deviceCommand(const std::string &arguments) {
  if (arguments.empty()) {
    out_ << "device: " << (device_.empty() ? "the best available" : device_) << "\n";
    return;
  }
  // Creating the engine now reports a device this machine lacks at once.
  auto engine = createEngine(arguments);
  if (!engine) {
    report(engine.error());
    return;
  }
  device_ = arguments;
  out_ << "runs use " << device_ << "\n";
}

namespace {

// The modules `import NAME;` finds: the .loop files of the stdlib folders.
std::vector<std::string> stdlibModules() {
  std::vector<std::string> modules;
  for (const std::string &dir : defaultStdlibDirs()) {
    std::error_code error;
    for (const auto &entry : std::filesystem::directory_iterator(dir, error))
      if (entry.path().extension() == ".loop")
        modules.push_back(entry.path().stem().string());
  }
  return modules;
}

} // namespace

std::vector<std::string> Repl::completions(const std::string &line, const std::string &word) const {
  static const std::vector<std::string> commands = {
      ":device", ":explain", ":help", ":list",  ":llvm", ":load", ":print",
      ":ptx",    ":q",       ":quit", ":reset", ":run",  ":time", ":who"};
  static const std::map<std::string, std::vector<std::string>> options = {
      {":run",
       {"--set", "--in", "--seed", "--random-range", "--device", "--skip-pass", "--pass-param",
        "--unsafe", "--bounds-check", "--fp-contract", "--remarks", "--out", "--save-inputs",
        "--check", "--reference", "--quiet", "--repeat"}},
      {":time",
       {"--set", "--in", "--seed", "--random-range", "--device", "--skip-pass", "--pass-param",
        "--unsafe", "--bounds-check", "--fp-contract", "--repeat"}},
      {":explain",
       {"--after", "--target", "--remarks", "--changes", "--perf", "--set", "--device-model",
        "--skip-pass", "--pass-param", "--unsafe", "--fp-contract"}},
      {":ptx", {"--gpu", "--unsafe", "--skip-pass", "--pass-param", "--fp-contract"}},
      {":llvm",
       {"--target", "--gpu", "--no-opt", "--unsafe", "--skip-pass", "--pass-param",
        "--fp-contract"}},
      {":print", {"--full"}}};
  static const std::vector<std::string> words = {
      // what evaluates, and the language's keywords and builtins
      "let",  "zeros", "ones",   "iota",   "random",  "linspace", "load",    "save",  "kernel",
      "fn",   "assoc", "import", "parfor", "redomap", "scan",     "combine", "for",   "if",
      "else", "var",   "return", "in",     "out",     "inout",    "sqrt",    "exp",   "log",
      "sin",  "cos",   "tanh",   "pow",    "abs",     "min",      "max",     "floor", "ceil",
      "i32",  "i64",   "f32",    "f64",    "bool",    "true",     "false"};
  std::vector<std::string> candidates;
  std::string head = trim(line);
  auto kernelNames = [&] {
    if (session_ && session_->program)
      for (const auto &module : session_->program->modules)
        for (const auto &kernel : module->kernels)
          candidates.push_back(kernel->name);
  };
  if (head.empty() && word.starts_with(":")) {
    candidates = commands;
  } else if (head.starts_with(":")) {
    std::string command = head.substr(0, head.find_first_of(" \t"));
    if (word.starts_with("-")) {
      if (auto found = options.find(command); found != options.end())
        candidates = found->second;
      candidates.push_back("--help");
    } else if (command == ":device" || head.ends_with("--device")) {
      for (const char *device : knownDevices())
        candidates.push_back(device);
    } else if (command == ":print") {
      candidates = values_.names();
    } else if (command != ":load") {
      kernelNames();
    }
  } else if (std::ranges::count(line, '"') % 2 == 1) {
    return {}; // a file name in a string
  } else if (head == "import") {
    for (const std::string &module : stdlibModules())
      candidates.push_back(module + ";");
  } else {
    candidates = words;
    kernelNames();
    if (session_ && session_->program)
      for (const auto &module : session_->program->modules)
        for (const auto &fn : module->fns)
          candidates.push_back(fn->name);
    for (const std::string &name : values_.names())
      candidates.push_back(name);
  }
  std::erase_if(candidates,
                [&](const std::string &candidate) { return !candidate.starts_with(word); });
  std::ranges::sort(candidates);
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  return candidates;
}

void Repl::listCommand() const {
  if (definitions_.empty()) {
    out_ << "nothing is defined\n";
    return;
  }
  for (const ReplDefinition &definition : definitions_) {
    // The header, up to the body, on one line.
    std::string header = definition.text.substr(0, definition.text.find('{'));
    std::string line;
    std::istringstream words(header);
    for (std::string word; words >> word;)
      line += (line.empty() ? "" : " ") + word;
    out_ << line << "\n";
  }
}

void Repl::printHelp() const { out_ << kHelp; }

} // namespace loopc::driver
