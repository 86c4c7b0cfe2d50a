// The session behind `loopc repl`, apart from the terminal so tests can drive
// it line by line. Definitions typed at the prompt (kernel, fn, assoc fn,
// import) accumulate into one program, checked as a whole each time one is
// added: a definition that does not check is dropped with its diagnostics,
// which point into the lines typed (or the file loaded), and the earlier ones
// stay. A definition continues over several lines while its brackets are
// open. Lines starting with ':' are commands (:run, :time, :explain, :ptx,
// :llvm, :device, :load, :list, :who, :print, :reset, :help, :quit); any
// other input is evaluated against the session's values (ReplValues.h).
#pragma once

#include "driver/ReplValues.h"
#include "driver/Session.h"

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace loopc::driver {

// Where the REPL's lines come from: a terminal with line editing, or a plain
// stream (a script piped in, a test).
class LineSource {
public:
  virtual ~LineSource() = default;
  // The next line without its newline, or nothing at the end of the input.
  // Only interactive sources show `prompt`.
  virtual std::optional<std::string> readLine(const std::string &prompt) = 0;
  // An input the session took whole, its lines joined by newlines (a
  // definition typed over several lines is one): for the history.
  virtual void remember(const std::string &input) {}
};

// Lines read from a stream; prompts are written to `prompts` when given (a
// terminal without line editing), else not at all (a script).
class StreamLineSource : public LineSource {
public:
  explicit StreamLineSource(std::istream &in, std::ostream *prompts = nullptr)
      : in_(in), prompts_(prompts) {}
  std::optional<std::string> readLine(const std::string &prompt) override;

private:
  std::istream &in_;
  std::ostream *prompts_;
};

// One top-level definition of the session, remembered with where it was
// typed or loaded from so that diagnostics can quote it there.
struct ReplDefinition {
  enum class Kind { Import, Kernel, Fn, Unknown };
  Kind kind = Kind::Unknown;
  std::string name; // the kernel or fn name; the import's text for an import
  std::string text;
  std::string origin;                            // "<input>" or the file loaded
  std::shared_ptr<const std::string> originText; // the whole input it came from
  uint32_t originLine = 1;                       // where `text` starts in it
  uint32_t originColumn = 1;
  // The typed input it came from, counted from 1 in the session (0: a file
  // loaded): diagnostics name an earlier input `<input N>`, the one being
  // added `<input>`.
  uint32_t input = 0;
};

class Repl {
public:
  // Results and messages go to `out`, diagnostics and errors to `err`.
  Repl(std::ostream &out, std::ostream &err);
  ~Repl();

  // Handles one line; returns false once the session should end (:quit).
  bool handleLine(const std::string &line);
  // Reports a definition left unfinished at the end of the input.
  void finishInput();
  // "loop> ", or "...> " while a definition continues.
  std::string prompt() const;
  // Reads and handles lines until :quit or the end of the input.
  void run(LineSource &source);

  // The device runs use when a command names none; empty means the best
  // one available.
  void setDefaultDevice(std::string device) { device_ = std::move(device); }
  // Adds every definition of a file, as :load does; false when it fails.
  bool loadFile(const std::string &path);
  // The inputs that failed so far (an error printed for them).
  uint32_t failures() const { return failures_; }
  // Makes the session end at the first input that fails (a script piped in).
  void stopAtFailure(bool stop) { stopAtFailure_ = stop; }
  // Stops the run in progress, or drops the line being typed (Ctrl-C):
  // async-signal-safe, for the terminal's SIGINT handler.
  static void interrupt();
  // What may complete `word`, the word before the cursor, with `line` the
  // text before it: commands and their options, kernels, fns, values,
  // devices, stdlib modules, builtins and keywords, as the place asks; sorted.
  // None where a file name goes (:load, a string), which the terminal
  // completes itself.
  std::vector<std::string> completions(const std::string &line, const std::string &word) const;

private:
  bool addDefinitions(std::string text, const std::string &origin);
  // Prints why a candidate program (the definitions with an input added) was
  // refused: its diagnostics, led by an error saying which earlier
  // definitions the input breaks when it does.
  void reportRefusal(const Session &session, const std::vector<ReplDefinition> &candidate,
                     const std::vector<uint32_t> &lines, uint32_t mainFile,
                     const std::shared_ptr<const std::string> &input, uint32_t inputNumber) const;
  bool handleCommand(const std::string &line);
  // Clears an interrupt; true when there was one.
  static bool clearInterrupt();
  void runCommand(const std::string &arguments, bool timing);
  void explainCommand(const std::string &arguments);
  void codeCommand(const std::string &arguments, bool ptx);
  void deviceCommand(const std::string &arguments);
  void listCommand() const;
  void printCommand(const std::string &arguments);
  void printHelp() const;
  // The definitions as the evaluator compiles input into them.
  ReplProgram replProgram() const;

  // The program of the definitions so far, or null (after an error) when
  // there is none.
  const Program *program();
  Expected<const KernelDecl *> kernelNamed(const std::string &name);
  // Prints an error, quoting its source where it has one.
  void report(const Error &error);
  // Prints remarks (`--remarks`) to `out`, each quoting its source in the
  // input it was typed in.
  void printRemarks(std::ostream &out, const std::vector<passes::Remark> &remarks) const;

  std::ostream &out_;
  std::ostream &err_;
  std::vector<ReplDefinition> definitions_;
  // Where each definition starts in the session's program text, by index.
  std::vector<uint32_t> definitionLines_;
  // The checked program of `definitions_`; null while there are none.
  std::unique_ptr<Session> session_;
  uint32_t mainFile_ = 0;
  std::string pending_;      // a definition continued over several lines
  uint32_t inputsTyped_ = 0; // the inputs of program text typed so far
  std::string device_;
  ReplValues values_{out_, err_};
  uint32_t failures_ = 0;
  bool stopAtFailure_ = false;
};

} // namespace loopc::driver
