// Rewrites ANTLR's syntax error reports into messages about the .loop
// language. Token sets are described through groups ("an expression", "a
// type", ...) because a raw expected set at the start of an expression has
// fifteen members, which helps nobody.
#include "frontend/SyntaxErrors.h"

#include "LoopLexer.h"
#include "LoopParser.h"

#include "support/Suggestions.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

namespace loopc {

namespace {

using grammar::LoopLexer;
using grammar::LoopParser;

// Sets of tokens that read better as one phrase. A group is used when every
// one of its members is expected; members are token names as the vocabulary
// spells them (literal names are quoted).
struct TokenGroup {
  const char *phrase;
  std::vector<std::string> members;
};

const std::vector<TokenGroup> &tokenGroups() {
  static const std::vector<TokenGroup> groups = {
      {"an expression",
       {"'-'", "'!'", "'redomap'", "'('", "INT", "FLOAT", "'true'", "'false'", "'inf'", "ID",
        "'i32'", "'i64'", "'f32'", "'f64'", "'bool'"}},
      {"a statement",
       {"'let'", "'var'", "'combine'", "'scan'", "'for'", "'parfor'", "'if'", "'return'", "'{'",
        "'unsafe'", "ID"}},
      {"a type", {"'i32'", "'i64'", "'f32'", "'f64'", "'bool'"}},
      {"a declaration", {"'kernel'", "'fn'", "'assoc'", "'unsafe'"}},
      {"an assignment operator", {"'='", "'+='", "'-='", "'*='", "'/='", "'%='"}},
      {"an operator",
       {"'*'", "'/'", "'%'", "'+'", "'-'", "'<'", "'<='", "'>'", "'>='", "'=='", "'!='", "'&&'",
        "'||'", "'?'"}},
  };
  return groups;
}

// Sets larger than this are not listed: `unexpected 'x'` says more.
constexpr size_t kMaxListedAlternatives = 6;

std::optional<size_t> tokenTypeNamed(const antlr4::dfa::Vocabulary &vocabulary,
                                     const std::string &name) {
  for (size_t type = 1; type <= vocabulary.getMaxTokenType(); ++type)
    if (vocabulary.getLiteralName(type) == name || vocabulary.getSymbolicName(type) == name)
      return type;
  return std::nullopt;
}

std::string describeTokenType(const antlr4::dfa::Vocabulary &vocabulary, size_t type) {
  switch (type) {
  case antlr4::Token::EOF:
    return "end of file";
  case LoopLexer::ID:
    return "identifier";
  case LoopLexer::INT:
    return "integer";
  case LoopLexer::FLOAT:
    return "number";
  case LoopLexer::STRING:
    return "string";
  default:
    return vocabulary.getLiteralName(type);
  }
}

std::string joinAlternatives(const std::vector<std::string> &items) {
  if (items.size() == 1)
    return items[0];
  std::string text = items.size() == 2 ? "" : "one of ";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0)
      text += i + 1 == items.size() ? " or " : ", ";
    text += items[i];
  }
  return text;
}

// A character as it can be shown inside quotes.
std::string printableCharacter(const std::string &text) {
  if (text.size() == 1 && !std::isprint(static_cast<unsigned char>(text[0]))) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(text[0]));
    return escaped;
  }
  return text;
}

// The message for an operator of C that loopc does not have, or an attribute
// out of place: said whatever the parser expected, as no expected set
// explains it.
std::optional<std::string> absentOperatorMessage(antlr4::Token *token) {
  if (token->getText() == "@")
    return "'@' begins a kernel attribute, written before a kernel (@fp_contract(off) kernel "
           "k(...)); it has no meaning here";
  if (token->getType() == LoopLexer::SHIFT_OP)
    return "loopc has no shift operators: use multiplication or division by a power of two";
  if (token->getType() != LoopLexer::BITWISE_OP)
    return std::nullopt;
  std::string message = "loopc has no bitwise operators";
  if (token->getText() == "&")
    message += ": use '&&' for a logical and";
  else if (token->getText() == "|")
    message += ": use '||' for a logical or";
  else if (token->getText() == "^")
    message += ": use '!=' on bools for an exclusive or, pow(x, y) for a power";
  return message;
}

std::string unexpectedMessage(antlr4::Token *token) {
  if (std::optional<std::string> message = absentOperatorMessage(token))
    return *message;
  if (token->getType() == LoopLexer::UNKNOWN_CHAR && token->getText() == "\"")
    return "unterminated string";
  return "unexpected " + describeToken(token);
}

// What the parser matched last in `ctx`: the innermost expression, or the
// last token, for "expected ';' after expression" / "after 'x'". An
// expression not yet begun follows the token before it: "after '+'".
std::string describeLastMatched(antlr4::Parser *parser) {
  antlr4::tree::ParseTree *tree = parser->getContext();
  if (dynamic_cast<grammar::LoopParser::ExprContext *>(tree) && tree->children.empty())
    if (antlr4::Token *previous = parser->getTokenStream()->LT(-1))
      return "'" + previous->getText() + "'";
  while (tree) {
    if (dynamic_cast<grammar::LoopParser::ExprContext *>(tree))
      return "expression";
    if (auto *terminal = dynamic_cast<antlr4::tree::TerminalNode *>(tree)) {
      antlr4::Token *token = terminal->getSymbol();
      if (token->getType() == antlr4::Token::EOF ||
          token->getTokenIndex() == static_cast<size_t>(-1)) // conjured by recovery
        return "";
      return "'" + token->getText() + "'";
    }
    tree = tree->children.empty() ? nullptr : tree->children.back();
  }
  return "";
}

// The types of C and their loopc spelling.
const std::map<std::string, std::string> &cTypeNames() {
  static const std::map<std::string, std::string> names = {
      {"float", "f32"},  {"double", "f64"},   {"int", "i32"},
      {"long", "i64"},   {"int32_t", "i32"},  {"int64_t", "i64"},
      {"size_t", "i64"}, {"unsigned", "i32"}, {"boolean", "bool"}};
  return names;
}

// The language's keywords, from the vocabulary.
std::vector<std::string> keywords(const antlr4::dfa::Vocabulary &vocabulary) {
  std::vector<std::string> words;
  for (size_t type = 1; type <= vocabulary.getMaxTokenType(); ++type) {
    std::string literal = vocabulary.getLiteralName(type);
    if (literal.size() > 2 && std::isalpha(static_cast<unsigned char>(literal[1])))
      words.push_back(literal.substr(1, literal.size() - 2));
  }
  return words;
}

// A hint for a habit of C (or a slip) that explains a syntax error at
// `token` better than the expected set: a number with a suffix (`1.0f`), a
// type spelt as in C (`float`), a misspelt keyword (`parfr i in ...`).
std::string habitHint(antlr4::Parser *parser, antlr4::Token *token) {
  if (token->getType() == antlr4::Token::EOF)
    return "";
  antlr4::Token *previous = token->getTokenIndex() > 0
                                ? parser->getTokenStream()->get(token->getTokenIndex() - 1)
                                : nullptr;
  bool adjacent = previous && previous->getStopIndex() + 1 == token->getStartIndex();
  // An attribute before a function: attributes are the kernels'.
  if (previous && previous->getText() == ")" &&
      (token->getText() == "fn" || token->getType() == LoopLexer::ASSOC) &&
      parser->getContext()->getRuleIndex() == LoopParser::RuleTopDecl)
    return "; attributes belong before a kernel, and a fn follows the kernel that calls it";
  if (token->getType() == LoopLexer::ID && adjacent &&
      (previous->getType() == LoopLexer::FLOAT || previous->getType() == LoopLexer::INT))
    return "; numbers take no suffix in loopc: write '" + previous->getText() +
           "', which takes the type its use needs";
  auto cType = [](antlr4::Token *word) -> std::optional<std::string> {
    if (!word || word->getType() != LoopLexer::ID)
      return std::nullopt;
    auto found = cTypeNames().find(word->getText());
    return found == cTypeNames().end() ? std::nullopt : std::optional(found->second);
  };
  if (std::optional<std::string> type = cType(token))
    return "; did you mean '" + *type + "'? loopc's types are i32, i64, f32, f64 and bool";
  if (std::optional<std::string> type = cType(previous); type && token->getType() == LoopLexer::ID)
    return "; a value is declared as 'let " + token->getText() + ": " + *type +
           " = ...' ('var' for one that changes)";
  // An identifier where one cannot be, or right before another.
  antlr4::Token *misspelt = token->getType() == LoopLexer::ID ? token : nullptr;
  if (previous && previous->getType() == LoopLexer::ID && token->getType() == LoopLexer::ID)
    misspelt = previous;
  if (misspelt) {
    std::string keyword = closestName(misspelt->getText(), keywords(parser->getVocabulary()));
    if (!keyword.empty() && misspelt == token)
      return "; did you mean '" + keyword + "'?";
    if (!keyword.empty())
      return "; '" + misspelt->getText() + "' is no keyword: did you mean '" + keyword + "'?";
  }
  return "";
}

} // namespace

std::string describeToken(antlr4::Token *token) {
  if (token->getType() == antlr4::Token::EOF)
    return "end of file";
  if (token->getType() == LoopLexer::UNKNOWN_CHAR)
    return "character '" + printableCharacter(token->getText()) + "'";
  return "'" + token->getText() + "'";
}

std::optional<std::string> describeExpected(const antlr4::dfa::Vocabulary &vocabulary,
                                            const antlr4::misc::IntervalSet &expected) {
  std::vector<ssize_t> remaining = expected.toList();
  std::vector<std::string> phrases;
  for (const TokenGroup &group : tokenGroups()) {
    std::vector<ssize_t> memberTypes;
    for (const std::string &member : group.members)
      if (std::optional<size_t> type = tokenTypeNamed(vocabulary, member))
        memberTypes.push_back(static_cast<ssize_t>(*type));
    bool allExpected = std::ranges::all_of(memberTypes, [&](ssize_t type) {
      return std::ranges::find(remaining, type) != remaining.end();
    });
    if (!allExpected)
      continue;
    std::erase_if(remaining, [&](ssize_t type) {
      return std::ranges::find(memberTypes, type) != memberTypes.end();
    });
    phrases.push_back(group.phrase);
  }
  // Tokens first, then groups, then the end of the file.
  std::vector<std::string> items;
  for (ssize_t type : remaining)
    if (type != static_cast<ssize_t>(antlr4::Token::EOF))
      items.push_back(describeTokenType(vocabulary, static_cast<size_t>(type)));
  items.insert(items.end(), phrases.begin(), phrases.end());
  if (expected.contains(antlr4::Token::EOF))
    items.push_back("end of file");
  if (items.empty() || items.size() > kMaxListedAlternatives)
    return std::nullopt;
  return joinAlternatives(items);
}

// ------------------------------------------------------------- reporter ---

SourceRange SyntaxErrorReporter::rangeOf(antlr4::Token *token) const {
  SourceRange range;
  range.begin = {file_, static_cast<uint32_t>(token->getLine()),
                 static_cast<uint32_t>(token->getCharPositionInLine() + 1)};
  range.end = range.begin;
  if (token->getType() != antlr4::Token::EOF && token->getStopIndex() > token->getStartIndex())
    range.end.col += static_cast<uint32_t>(token->getStopIndex() - token->getStartIndex());
  return range;
}

void SyntaxErrorReporter::report(SourceRange range, std::string message) {
  if (errorCount_ >= kMaxErrors)
    return;
  if (errorCount_ > 0 && range.begin.line == lastErrorLine_)
    return;
  lastErrorLine_ = range.begin.line;
  ++errorCount_;
  diagnostics_.error(range, std::move(message));
}

void SyntaxErrorReporter::syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *, size_t line,
                                      size_t charPositionInLine, const std::string &,
                                      std::exception_ptr) {
  SourceRange range;
  range.begin = {file_, static_cast<uint32_t>(line), static_cast<uint32_t>(charPositionInLine + 1)};
  range.end = range.begin;
  std::string message = "unexpected character";
  if (auto *lexer = dynamic_cast<antlr4::Lexer *>(recognizer)) {
    antlr4::CharStream *input = lexer->getInputStream();
    std::string text =
        input->getText(antlr4::misc::Interval(lexer->tokenStartCharIndex, input->index()));
    if (!text.empty())
      message += " '" + printableCharacter(text) + "'";
  }
  report(range, message);
}

// ------------------------------------------------------------- strategy ---

SourceRange SyntaxErrorStrategy::locate(antlr4::Parser *parser, antlr4::Token *token) const {
  // The end-of-file token sits past the last line, where no caret can be
  // shown; point just after the last real token instead.
  if (token->getType() == antlr4::Token::EOF && token->getTokenIndex() > 0)
    return justAfter(parser->getTokenStream()->get(token->getTokenIndex() - 1));
  return reporter_.rangeOf(token);
}

SourceRange SyntaxErrorStrategy::justAfter(antlr4::Token *token) const {
  SourceRange range = reporter_.rangeOf(token);
  range.begin = range.end;
  ++range.begin.col;
  range.end = range.begin;
  return range;
}

void SyntaxErrorStrategy::reportAt(antlr4::Parser *parser, antlr4::Token *token,
                                   const antlr4::misc::IntervalSet &expected) {
  if (std::optional<std::string> absent = absentOperatorMessage(token)) {
    reporter_.report(locate(parser, token), *absent);
    return;
  }
  std::optional<std::string> what = describeExpected(parser->getVocabulary(), expected);
  std::string message;
  if (token->getType() == antlr4::Token::EOF)
    message = what ? "unexpected end of file; expected " + *what : "unexpected end of file";
  else if (token->getType() == LoopLexer::UNKNOWN_CHAR || !what)
    message = unexpectedMessage(token);
  else
    message = "expected " + *what;
  // Name what came before only when the parser stopped at `token`; a failed
  // prediction may have looked further ahead.
  if (what && token == parser->getCurrentToken() && token->getType() != antlr4::Token::EOF)
    if (std::string after = describeLastMatched(parser); !after.empty())
      message += " after " + after;
  reporter_.report(locate(parser, token), message + habitHint(parser, token));
}

void SyntaxErrorStrategy::reportNoViableAlternative(antlr4::Parser *parser,
                                                    const antlr4::NoViableAltException &e) {
  // When prediction failed after reading some tokens, the set expected at the
  // decision's start says nothing about the token that broke it.
  antlr4::Token *offending = e.getOffendingToken();
  if (e.getStartToken() != offending && offending->getType() != antlr4::Token::EOF) {
    reporter_.report(locate(parser, offending),
                     unexpectedMessage(offending) + habitHint(parser, offending));
    return;
  }
  reportAt(parser, offending, e.getExpectedTokens());
}

void SyntaxErrorStrategy::reportInputMismatch(antlr4::Parser *parser,
                                              const antlr4::InputMismatchException &e) {
  reportAt(parser, e.getOffendingToken(), e.getExpectedTokens());
}

void SyntaxErrorStrategy::reportFailedPredicate(antlr4::Parser *parser,
                                                const antlr4::FailedPredicateException &e) {
  reporter_.report(locate(parser, e.getOffendingToken()), unexpectedMessage(e.getOffendingToken()));
}

// The parser drops a token it cannot use. Where the alternatives are few and
// the file could not simply end here, naming them helps more than repeating
// the token (`a: foo f32` gets "expected one of 'in', 'out', 'inout' or a
// type"); a stray '}' at top level just reads "unexpected '}'".
void SyntaxErrorStrategy::reportUnwantedToken(antlr4::Parser *parser) {
  if (inErrorRecoveryMode(parser))
    return;
  beginErrorCondition(parser);
  antlr4::Token *token = parser->getCurrentToken();
  antlr4::misc::IntervalSet expected = getExpectedTokens(parser);
  if (expected.contains(antlr4::Token::EOF)) {
    reporter_.report(locate(parser, token), unexpectedMessage(token) + habitHint(parser, token));
    return;
  }
  reportAt(parser, token, expected);
}

antlr4::Token *SyntaxErrorStrategy::singleTokenDeletion(antlr4::Parser *parser) {
  if (dynamic_cast<grammar::LoopParser::ExprContext *>(parser->getContext()) &&
      parser->getCurrentToken()->getText() == ";")
    return nullptr;
  return DefaultErrorStrategy::singleTokenDeletion(parser);
}

void SyntaxErrorStrategy::reportMissingToken(antlr4::Parser *parser) {
  if (inErrorRecoveryMode(parser))
    return;
  beginErrorCondition(parser);
  antlr4::misc::IntervalSet expected = getExpectedTokens(parser);
  std::optional<std::string> what = describeExpected(parser->getVocabulary(), expected);
  antlr4::Token *previous = parser->getTokenStream()->LT(-1);
  if (!what || !previous || absentOperatorMessage(parser->getCurrentToken())) {
    reportAt(parser, parser->getCurrentToken(), expected);
    return;
  }
  // Like a C compiler, point just past what came before the missing token:
  // that is where it has to be typed.
  std::string message = "expected " + *what;
  if (std::string after = describeLastMatched(parser); !after.empty())
    message += " after " + after;
  reporter_.report(justAfter(previous), message);
}

} // namespace loopc
