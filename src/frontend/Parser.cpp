// Runs the generated ANTLR lexer and parser over one file. ANTLR's console
// listeners are replaced by the SyntaxErrorReporter so nothing reaches stderr
// directly, and the AST is built only from a tree without syntax errors.
#include "frontend/Parser.h"

#include "frontend/AstBuilder.h"
#include "frontend/SyntaxErrors.h"

#include "LoopLexer.h"
#include "LoopParser.h"

namespace loopc {

std::unique_ptr<Module> parseModule(uint32_t file, const SourceManager &sources,
                                    DiagnosticEngine &diagnostics) {
  SyntaxErrorReporter reporter(file, diagnostics);
  // ANTLR decodes UTF-8 on load and throws on malformed input; that is the
  // one exception that can escape it here.
  std::unique_ptr<antlr4::ANTLRInputStream> input;
  try {
    input = std::make_unique<antlr4::ANTLRInputStream>(sources.file(file).text);
  } catch (const std::exception &) {
    SourceRange wholeFile;
    wholeFile.begin = {file, 1, 1};
    wholeFile.end = wholeFile.begin;
    diagnostics.error(wholeFile, "the file is not valid UTF-8");
    return nullptr;
  }
  grammar::LoopLexer lexer(input.get());
  lexer.removeErrorListeners();
  lexer.addErrorListener(&reporter);
  antlr4::CommonTokenStream tokens(&lexer);
  grammar::LoopParser parser(&tokens);
  parser.removeErrorListeners();
  parser.addErrorListener(&reporter);
  parser.setErrorHandler(std::make_shared<SyntaxErrorStrategy>(reporter));
  grammar::LoopParser::ProgramContext *tree = parser.program();
  if (reporter.errorCount() > 0 || parser.getNumberOfSyntaxErrors() > 0)
    return nullptr;
  return AstBuilder(file, diagnostics).build(tree);
}

} // namespace loopc
