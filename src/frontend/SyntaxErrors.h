// Syntax errors in the words of the language, not of ANTLR. ANTLR's default
// recovery (single-token insertion and deletion, resynchronisation) stays, so
// one run reports several independent errors; what changes is the text and
// the place: `expected ';' after expression` just past the expression,
// `unexpected '}'`, `expected one of 'in', 'out', 'inout' or a type`, with
// token sets rendered as quoted keywords and friendly names, never as T__3,
// <EOF> or "mismatched input".
#pragma once

#include "support/Diagnostics.h"

#include "antlr4-runtime.h"

#include <optional>

namespace loopc {

// The one sink for the syntax errors of one file. It is the error listener of
// both the lexer and the parser, and the error strategy reports through it.
// It keeps the output readable: at most one error per source line (a second
// one on the same line is almost always a consequence of the first), and at
// most kMaxErrors per file.
class SyntaxErrorReporter : public antlr4::BaseErrorListener {
public:
  static constexpr unsigned kMaxErrors = 20;

  SyntaxErrorReporter(uint32_t file, DiagnosticEngine &diagnostics)
      : file_(file), diagnostics_(diagnostics) {}

  void report(SourceRange range, std::string message);
  unsigned errorCount() const { return errorCount_; }
  uint32_t file() const { return file_; }

  // The range a token covers in the file.
  SourceRange rangeOf(antlr4::Token *token) const;

  // ANTLR's listener entry point. With the strategy below the parser never
  // calls it; the lexer does for a character no token matches.
  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offendingSymbol, size_t line,
                   size_t charPositionInLine, const std::string &msg,
                   std::exception_ptr e) override;

private:
  uint32_t file_;
  DiagnosticEngine &diagnostics_;
  unsigned errorCount_ = 0;
  uint32_t lastErrorLine_ = 0;
};

// DefaultErrorStrategy with the messages rewritten. Recovery is unchanged.
class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  explicit SyntaxErrorStrategy(SyntaxErrorReporter &reporter) : reporter_(reporter) {}

protected:
  void reportNoViableAlternative(antlr4::Parser *parser,
                                 const antlr4::NoViableAltException &e) override;
  void reportInputMismatch(antlr4::Parser *parser,
                           const antlr4::InputMismatchException &e) override;
  void reportFailedPredicate(antlr4::Parser *parser,
                             const antlr4::FailedPredicateException &e) override;
  void reportUnwantedToken(antlr4::Parser *parser) override;
  void reportMissingToken(antlr4::Parser *parser) override;
  // ANTLR's deletion, except of a ';' where an expression should begin: it
  // ends the statement (`r = a + ;`), and deleting it would make the next
  // statement's first name the missing operand, with a second, false error.
  antlr4::Token *singleTokenDeletion(antlr4::Parser *parser) override;

private:
  // `expected <set>` at the token when the set is short enough to read,
  // otherwise `unexpected <token>`.
  void reportAt(antlr4::Parser *parser, antlr4::Token *token,
                const antlr4::misc::IntervalSet &expected);
  // Where an error at `token` is shown.
  SourceRange locate(antlr4::Parser *parser, antlr4::Token *token) const;
  // The empty range just past `token`, where a missing token belongs.
  SourceRange justAfter(antlr4::Token *token) const;

  SyntaxErrorReporter &reporter_;
};

// How a token is named in a message: `'}'`, `'foo'`, `end of file`,
// `character '$'`.
std::string describeToken(antlr4::Token *token);

// The expected-token set in words (`';'`, `')' or ','`, `one of 'in', 'out',
// 'inout' or a type`), or nothing when it is too large to help.
std::optional<std::string> describeExpected(const antlr4::dfa::Vocabulary &vocabulary,
                                            const antlr4::misc::IntervalSet &expected);

} // namespace loopc
