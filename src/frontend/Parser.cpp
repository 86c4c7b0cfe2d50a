// Runs the generated ANTLR lexer and parser over one file. ANTLR's console
// listeners are replaced by the SyntaxErrorReporter so nothing reaches stderr
// directly, and the AST is built only from a tree without syntax errors.
#include "frontend/Parser.h"

#include "frontend/AstBuilder.h"
#include "frontend/SyntaxErrors.h"

#include "LoopLexer.h"
#include "LoopParser.h"

#include <algorithm>
#include <vector>

namespace loopc {

namespace {

// How deep a program may nest. The parser, the checker, the lowering and the
// printers recurse once per level; loopc's main thread has a stack of 1 GiB
// (Cli.h), which these limits keep far from full. Real programs nest a few
// dozen levels.
constexpr size_t kMaxTokens = 1'000'000;
constexpr int kMaxBracketDepth = 10'000;
constexpr size_t kMaxTreeDepth = 100'000;

// The first token past kMaxTokens, or opening brackets past
// kMaxBracketDepth, reported before the parser recurses into them; and a
// `/*` that no `*/` closes (the lexer then reads `/` and `*`, which the
// parser would call an unexpected operator).
bool nestingFits(antlr4::CommonTokenStream &tokens, SyntaxErrorReporter &reporter) {
  int depth = 0;
  antlr4::Token *previous = nullptr;
  for (antlr4::Token *token : tokens.getTokens()) {
    if (previous && previous->getText() == "/" && token->getText() == "*" &&
        token->getStartIndex() == previous->getStopIndex() + 1) {
      reporter.report(reporter.rangeOf(previous), "unterminated comment: '/*' without '*/'");
      return false;
    }
    previous = token;
    if (token->getTokenIndex() >= kMaxTokens) {
      reporter.report(reporter.rangeOf(token), "the file has more than " +
                                                   std::to_string(kMaxTokens) +
                                                   " tokens: split it into modules");
      return false;
    }
    const std::string text = token->getText();
    if (text == "(" || text == "[" || text == "{")
      ++depth;
    else if (text == ")" || text == "]" || text == "}")
      --depth;
    if (depth > kMaxBracketDepth) {
      reporter.report(reporter.rangeOf(token),
                      "brackets nested more than " + std::to_string(kMaxBracketDepth) + " deep");
      return false;
    }
  }
  return true;
}

// The first rule of the parse tree, in source order, more than `limit` rules
// deep (a chain of a million `+` is a million levels, which the parser
// builds without recursing), found without recursion; null when there is
// none. Children are visited left to right, so a left-deep chain is reported
// where it starts, not at the operand where the limit happens to fall.
antlr4::ParserRuleContext *ruleTooDeep(antlr4::ParserRuleContext *root, size_t limit) {
  std::vector<std::pair<antlr4::ParserRuleContext *, size_t>> pending = {{root, 1}};
  while (!pending.empty()) {
    auto [node, depth] = pending.back();
    pending.pop_back();
    if (depth > limit)
      return node;
    for (auto child = node->children.rbegin(); child != node->children.rend(); ++child)
      if (auto *rule = dynamic_cast<antlr4::ParserRuleContext *>(*child))
        pending.push_back({rule, depth + 1});
  }
  return nullptr;
}

// The offset of the first byte of `text` that does not start or continue a
// well-formed UTF-8 sequence (overlong forms and code points past U+10FFFF
// included; surrogates pass, as ANTLR's decoder takes them); text.size()
// when every byte does.
size_t firstInvalidUtf8(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    unsigned char lead = byte(at);
    size_t length = lead < 0x80                   ? 1
                    : lead >= 0xC2 && lead < 0xE0 ? 2
                    : lead >= 0xE0 && lead < 0xF0 ? 3
                    : lead >= 0xF0 && lead < 0xF5 ? 4
                                                  : 0;
    if (length == 0 || at + length > text.size())
      return at;
    for (size_t i = 1; i < length; ++i)
      if ((byte(at + i) & 0xC0) != 0x80)
        return at;
    unsigned char second = length > 1 ? byte(at + 1) : 0;
    if ((lead == 0xE0 && second < 0xA0) || (lead == 0xF0 && second < 0x90) ||
        (lead == 0xF4 && second >= 0x90))
      return at;
    at += length;
  }
  return at;
}

} // namespace

std::unique_ptr<Module> parseModule(uint32_t file, const SourceManager &sources,
                                    DiagnosticEngine &diagnostics) {
  SyntaxErrorReporter reporter(file, diagnostics);
  // ANTLR decodes UTF-8 on load and throws on malformed input; that is the
  // one exception that can escape it here.
  std::unique_ptr<antlr4::ANTLRInputStream> input;
  try {
    input = std::make_unique<antlr4::ANTLRInputStream>(sources.file(file).text);
  } catch (const std::exception &) {
    // Located at the first bad byte: its line, and its column in characters.
    const std::string &text = sources.file(file).text;
    size_t bad = std::min(firstInvalidUtf8(text), text.size());
    size_t lineStart = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    lineStart = lineStart == std::string::npos || bad == 0 ? 0 : lineStart + 1;
    uint32_t line = 1 + static_cast<uint32_t>(std::count(text.begin(), text.begin() + bad, '\n'));
    uint32_t column = 1 + static_cast<uint32_t>(std::count_if(
                              text.begin() + lineStart, text.begin() + bad, [](char c) {
                                return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
                              }));
    SourceRange at;
    at.begin = {file, line, column};
    at.end = at.begin;
    diagnostics.error(at, "the file is not valid UTF-8 (a byte here starts no character)");
    return nullptr;
  }
  grammar::LoopLexer lexer(input.get());
  lexer.removeErrorListeners();
  lexer.addErrorListener(&reporter);
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  if (!nestingFits(tokens, reporter))
    return nullptr;
  grammar::LoopParser parser(&tokens);
  parser.removeErrorListeners();
  parser.addErrorListener(&reporter);
  parser.setErrorHandler(std::make_shared<SyntaxErrorStrategy>(reporter));
  grammar::LoopParser::ProgramContext *tree = parser.program();
  if (reporter.errorCount() > 0 || parser.getNumberOfSyntaxErrors() > 0)
    return nullptr;
  if (antlr4::ParserRuleContext *deep = ruleTooDeep(tree, kMaxTreeDepth)) {
    reporter.report(reporter.rangeOf(deep->getStart()),
                    "the program nests more than " + std::to_string(kMaxTreeDepth) +
                        " levels deep (a very long expression?)");
    return nullptr;
  }
  return AstBuilder(file, diagnostics).build(tree);
}

} // namespace loopc
