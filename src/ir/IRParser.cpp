// Reading the printed Loop IR back (IRParser.h): a lexer, then a recursive
// descent over the forms IRPrinter.cpp writes, one function per form.
#include "ir/IRParser.h"

#include "ir/IRPrinter.h"

#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace loopc::ir {

namespace {

// ------------------------------------------------------------------ lexer ---

enum class TokenKind : uint8_t {
  Name,    // a name, a keyword; may hold dots (`i.block`, `gpu_thread.x`)
  Integer, // digits
  Float,   // digits with a point or an exponent
  String,  // "...", its text unescaped
  Symbol,  // punctuation, one to three characters
  // `// compiled for sizes where C is true`: the tokens of C follow, then
  // SizeChoiceEnd; `text` is "true" or "false".
  SizeChoice,
  SizeChoiceEnd,
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  std::string suffix; // a literal's type suffix (`i32` of `2_i32`), or ""
  uint32_t line = 0, col = 0;
  bool spaced = false; // whitespace before it: `f(x)` is a call, `x (` is not
};

class Lexer {
public:
  Lexer(std::string_view text, uint32_t file) : text_(text), file_(file) {}

  Expected<std::vector<Token>> tokens() && {
    while (true) {
      bool spaced = skipSpaceAndComments();
      if (!error_.message.empty())
        return std::unexpected(error_);
      Token token = next();
      token.spaced = spaced;
      if (!error_.message.empty())
        return std::unexpected(error_);
      bool end = token.kind == TokenKind::End;
      if (end && inSizeChoice_) {
        inSizeChoice_ = false;
        out_.push_back(Token{TokenKind::SizeChoiceEnd, "", "", line_, col_, false});
      }
      out_.push_back(std::move(token));
      if (end)
        return std::move(out_);
    }
  }

private:
  static constexpr std::string_view kSizeChoice = "// compiled for sizes where ";

  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void advance() {
    if (text_[pos_++] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
  }

  // Skips blanks and comments; a size-choice comment is turned into tokens.
  bool skipSpaceAndComments() {
    bool skipped = false;
    while (pos_ < text_.size()) {
      char c = peek();
      if (c == '\n' && inSizeChoice_) {
        inSizeChoice_ = false;
        out_.push_back(Token{TokenKind::SizeChoiceEnd, "", "", line_, col_, false});
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
        skipped = true;
      } else if (c == '/' && peek(1) == '/') {
        if (!inSizeChoice_ && text_.substr(pos_).starts_with(kSizeChoice) && startSizeChoice())
          continue;
        while (pos_ < text_.size() && peek() != '\n')
          advance();
        skipped = true;
      } else {
        break;
      }
    }
    return skipped;
  }

  // `// compiled for sizes where C is true`: emits SizeChoice and lexes C
  // as the line's next tokens, up to the ` is true` that ends it.
  bool startSizeChoice() {
    size_t lineEnd = text_.find('\n', pos_);
    std::string_view line = text_.substr(
        pos_, lineEnd == std::string_view::npos ? std::string_view::npos : lineEnd - pos_);
    std::string holds;
    if (line.ends_with(" is true"))
      holds = "true";
    else if (line.ends_with(" is false"))
      holds = "false";
    else
      return false;
    out_.push_back(Token{TokenKind::SizeChoice, holds, "", line_, col_, true});
    for (size_t i = 0; i < kSizeChoice.size(); ++i)
      advance();
    // The condition ends where ` is true` begins: lex it as a view.
    conditionEnd_ = pos_ + (line.size() - kSizeChoice.size()) - (holds.size() + 4);
    inSizeChoice_ = true;
    return true;
  }

  Token next() {
    Token token;
    token.line = line_;
    token.col = col_;
    if (inSizeChoice_ && pos_ >= conditionEnd_) {
      // ` is true` or ` is false`: the comment's end.
      while (pos_ < text_.size() && peek() != '\n')
        advance();
      inSizeChoice_ = false;
      token.kind = TokenKind::SizeChoiceEnd;
      return token;
    }
    if (pos_ >= text_.size())
      return token;
    char c = peek();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      token.kind = TokenKind::Name;
      while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '.') {
        token.text += peek();
        advance();
      }
      return token;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      token.kind = TokenKind::Integer;
      auto digits = [&] {
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
          token.text += peek();
          advance();
        }
      };
      digits();
      if (peek() == '.' && std::isdigit(static_cast<unsigned char>(peek(1)))) {
        token.kind = TokenKind::Float;
        token.text += peek();
        advance();
        digits();
      }
      if ((peek() == 'e' || peek() == 'E') &&
          (std::isdigit(static_cast<unsigned char>(peek(1))) ||
           ((peek(1) == '+' || peek(1) == '-') &&
            std::isdigit(static_cast<unsigned char>(peek(2)))))) {
        token.kind = TokenKind::Float;
        token.text += peek();
        advance();
        token.text += peek();
        advance();
        digits();
      }
      if (peek() == '_') {
        advance();
        while (std::isalnum(static_cast<unsigned char>(peek()))) {
          token.suffix += peek();
          advance();
        }
      }
      return token;
    }
    if (c == '"') {
      token.kind = TokenKind::String;
      advance();
      while (pos_ < text_.size() && peek() != '"' && peek() != '\n') {
        if (peek() == '\\' && pos_ + 1 < text_.size())
          advance();
        token.text += peek();
        advance();
      }
      if (peek() != '"') {
        fail(token, "a message without its closing '\"'");
        return token;
      }
      advance();
      return token;
    }
    token.kind = TokenKind::Symbol;
    for (std::string_view symbol : {"<<<", ">>>", "<-", "=>", "==", "!=", "<=", ">=", "&&", "||"})
      if (text_.substr(pos_).starts_with(symbol)) {
        token.text = symbol;
        for (size_t i = 0; i < symbol.size(); ++i)
          advance();
        return token;
      }
    if (std::string_view("()[]{},;:=<>+-*/%!").find(c) == std::string_view::npos) {
      fail(token, std::string("unexpected character '") + c + "'");
      return token;
    }
    token.text = std::string(1, c);
    advance();
    return token;
  }

  void fail(const Token &at, std::string message) {
    error_ = Error{std::move(message), SourceRange{SourceLoc{file_, at.line, at.col},
                                                   SourceLoc{file_, at.line, at.col}}};
  }

  std::string_view text_;
  uint32_t file_;
  size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
  bool inSizeChoice_ = false;
  size_t conditionEnd_ = 0;
  std::vector<Token> out_;
  Error error_;
};

// ----------------------------------------------------------------- parser ---

// A parse error, thrown inside the parser and returned as an Error by
// parseFunction: the descent stays readable without a check per call.
struct ParseFailure {
  Error error;
};

std::optional<BinaryOpKind> binaryOpNamed(std::string_view symbol) {
  for (BinaryOpKind op :
       {BinaryOpKind::Add, BinaryOpKind::Sub, BinaryOpKind::Mul, BinaryOpKind::Div,
        BinaryOpKind::Rem, BinaryOpKind::Lt, BinaryOpKind::Le, BinaryOpKind::Gt, BinaryOpKind::Ge,
        BinaryOpKind::Eq, BinaryOpKind::Ne, BinaryOpKind::And, BinaryOpKind::Or})
    if (symbol == binaryOpName(op))
      return op;
  return std::nullopt;
}

class Parser {
public:
  Parser(std::vector<Token> tokens, uint32_t file) : tokens_(std::move(tokens)), file_(file) {}

  Function parseFile() {
    std::vector<size_t> sizeChoices;
    while (peek().kind == TokenKind::SizeChoice) {
      sizeChoices.push_back(pos_);
      while (peek().kind != TokenKind::SizeChoiceEnd)
        take();
      take();
    }
    Function function = parseFunctionHeaderAndBody(sizeChoices);
    while (peek().kind != TokenKind::End) {
      if (!isName("kernel"))
        fail(peek(), "expected a kernel after the function, found " + describeToken(peek()));
      function.kernels.push_back(parseKernel());
    }
    return function;
  }

private:
  // ------------------------------------------------------------ tokens ---

  const Token &peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token &take() {
    const Token &token = peek();
    if (pos_ < tokens_.size() - 1)
      ++pos_;
    return token;
  }
  bool isName(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Name && peek(ahead).text == name;
  }
  bool isSymbol(std::string_view symbol, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Symbol && peek(ahead).text == symbol;
  }
  // `(` or `[` right after the token before it: a call's or an index's.
  bool isAttached(std::string_view symbol, size_t ahead = 0) const {
    return isSymbol(symbol, ahead) && !peek(ahead).spaced;
  }

  static std::string describeToken(const Token &token) {
    switch (token.kind) {
    case TokenKind::End:
      return "the end of the text";
    case TokenKind::String:
      return "a message";
    case TokenKind::SizeChoice:
    case TokenKind::SizeChoiceEnd:
      return "a size-choice comment";
    default:
      return "'" + token.text + "'";
    }
  }

  // Where a token is in the text: the place of what it begins, which
  // remarks, run-time errors and bounds checks name (the text is the
  // program).
  SourceRange rangeAt(const Token &token) const {
    uint32_t length = std::max<uint32_t>(1, static_cast<uint32_t>(token.text.size()));
    return SourceRange{SourceLoc{file_, token.line, token.col},
                       SourceLoc{file_, token.line, token.col + length - 1}};
  }

  [[noreturn]] void fail(const Token &at, std::string message) const {
    SourceLoc loc{file_, at.line, at.col};
    throw ParseFailure{Error{std::move(message), SourceRange{loc, loc}}};
  }

  void expectSymbol(std::string_view symbol) {
    if (!isSymbol(symbol))
      fail(peek(), "expected '" + std::string(symbol) + "', found " + describeToken(peek()));
    take();
  }
  void expectName(std::string_view name) {
    if (!isName(name))
      fail(peek(), "expected '" + std::string(name) + "', found " + describeToken(peek()));
    take();
  }
  std::string takeName(std::string_view what) {
    if (peek().kind != TokenKind::Name)
      fail(peek(), "expected " + std::string(what) + ", found " + describeToken(peek()));
    return take().text;
  }
  int64_t takeInteger(std::string_view what) {
    const Token &token = peek();
    int64_t value = 0;
    if (token.kind != TokenKind::Integer || !token.suffix.empty() ||
        std::from_chars(token.text.data(), token.text.data() + token.text.size(), value).ec !=
            std::errc())
      fail(token, "expected " + std::string(what) + ", found " + describeToken(token));
    take();
    return value;
  }
  ScalarType takeType() {
    const Token &token = peek();
    std::optional<ScalarType> type = scalarTypeNamed(token.text);
    if (token.kind != TokenKind::Name || !type)
      fail(token, "expected a type (i32, i64, f32, f64, bool), found " + describeToken(token));
    take();
    return *type;
  }

  // ------------------------------------------------------------ scopes ---

  template <typename F> auto withVar(const std::string &name, ScalarType type, F &&inside) {
    vars_[name].push_back(type);
    struct Pop {
      std::vector<ScalarType> &stack;
      ~Pop() { stack.pop_back(); }
    } pop{vars_[name]};
    return inside();
  }
  template <typename F> auto withBuffer(const Buffer &buffer, F &&inside) {
    buffers_[buffer->name].push_back(buffer);
    struct Pop {
      std::vector<Buffer> &stack;
      ~Pop() { stack.pop_back(); }
    } pop{buffers_[buffer->name]};
    return inside();
  }
  std::optional<ScalarType> varType(const std::string &name) const {
    auto found = vars_.find(name);
    if (found == vars_.end() || found->second.empty())
      return std::nullopt;
    return found->second.back();
  }
  Buffer bufferNamed(const std::string &name) const {
    auto found = buffers_.find(name);
    if (found == buffers_.end() || found->second.empty())
      return nullptr;
    return found->second.back();
  }
  Buffer takeBuffer() {
    const Token &token = peek();
    std::string name = takeName("an array's name");
    Buffer buffer = bufferNamed(name);
    if (!buffer)
      fail(token, "no array named '" + name + "' here");
    return buffer;
  }

  // ---------------------------------------------------------- literals ---

  // Literals are read with their suffix's type or the default, and take
  // their context's type afterwards (typed): the printer leaves out the
  // type wherever the context gives it (IRPrinter.cpp, exprText).
  Expr literal(Expr value, const Token &at, bool suffixed) {
    if (!suffixed)
      untyped_.insert(value.get());
    return locate(std::move(value), at);
  }

  // Records where `node` was read, for messages about it; the parser keeps
  // it alive, so that no later node takes its address in these tables.
  Expr locate(Expr node, const Token &at) {
    at_[node.get()] = at;
    located_.push_back(node);
    return node;
  }

  // `expr` with each literal that says no type of its own given the one its
  // context holds it to: `expected`, where the context has a type.
  Expr typed(const Expr &expr, std::optional<ScalarType> expected) {
    switch (expr->kind) {
    case ExprNode::Kind::IntImm:
    case ExprNode::Kind::FloatImm: {
      bool isFloatLiteral = expr->kind == ExprNode::Kind::FloatImm;
      if (!expected || *expected == expr->type)
        return expr;
      const Token &at = at_.at(expr.get());
      if (!untyped_.contains(expr.get()))
        fail(at, std::string("a literal of type ") + scalarTypeName(expr->type) + " where " +
                     scalarTypeName(*expected) + " is expected");
      if (isFloatLiteral && !isFloat(*expected))
        fail(at,
             std::string("a float literal where ") + scalarTypeName(*expected) + " is expected");
      if (!isFloatLiteral && !isInteger(*expected))
        fail(at, std::string("an integer literal where ") + scalarTypeName(*expected) +
                     " is expected (a float literal has a point: 2.0)");
      Expr retyped = isFloatLiteral
                         ? Expr(std::make_shared<FloatImm>(*expected, expr->as<FloatImm>()->value))
                         : Expr(std::make_shared<IntImm>(*expected, expr->as<IntImm>()->value));
      untyped_.insert(retyped.get()); // typed by its context, as the one it replaces
      return locate(retyped, Token(at));
    }
    case ExprNode::Kind::BoolImm:
    case ExprNode::Kind::Var:
      return expr;
    case ExprNode::Kind::Load: {
      const auto &load = *expr->as<Load>();
      std::vector<Expr> indices;
      for (const Expr &index : load.indices)
        indices.push_back(typed(index, std::nullopt));
      return std::make_shared<Load>(load.buffer, std::move(indices), load.source, load.speculative);
    }
    case ExprNode::Kind::Unary: {
      const auto &unary = *expr->as<Unary>();
      return std::make_shared<Unary>(
          unary.op, typed(unary.operand, unary.op == UnaryOpKind::Not
                                             ? std::optional<ScalarType>(ScalarType::Bool)
                                             : expected));
    }
    case ExprNode::Kind::Binary: {
      const auto &binary = *expr->as<Binary>();
      if (binary.op == BinaryOpKind::And || binary.op == BinaryOpKind::Or)
        return std::make_shared<Binary>(binary.op, typed(binary.lhs, ScalarType::Bool),
                                        typed(binary.rhs, ScalarType::Bool), binary.source);
      auto [lhs, rhs] =
          typedAlike(binary.lhs, binary.rhs, isComparison(binary.op) ? std::nullopt : expected);
      if (lhs->type != rhs->type)
        fail(at(binary.lhs), std::string("operands of '") + binaryOpName(binary.op) +
                                 "' of different types (" + scalarTypeName(lhs->type) + " and " +
                                 scalarTypeName(rhs->type) + ")");
      return std::make_shared<Binary>(binary.op, lhs, rhs, binary.source);
    }
    case ExprNode::Kind::Select: {
      const auto &select = *expr->as<Select>();
      auto [thenValue, elseValue] = typedAlike(select.thenValue, select.elseValue, expected);
      return std::make_shared<Select>(typed(select.cond, ScalarType::Bool), thenValue, elseValue);
    }
    case ExprNode::Kind::Cast: {
      const auto &cast = *expr->as<Cast>();
      return std::make_shared<Cast>(cast.type, typed(cast.operand, std::nullopt));
    }
    case ExprNode::Kind::Call: {
      const auto &call = *expr->as<Call>();
      std::optional<ScalarType> type = expected;
      for (const Expr &arg : call.args)
        if (!type && typesItself(arg))
          type = typed(arg, std::nullopt)->type;
      std::vector<Expr> args;
      for (const Expr &arg : call.args)
        args.push_back(typed(arg, type));
      ScalarType result = type ? *type : args.front()->type;
      return std::make_shared<Call>(result, call.builtin, std::move(args));
    }
    }
    return expr;
  }

  // Two operands of one type: the context's, or the first's that types
  // itself, given to the other.
  std::pair<Expr, Expr> typedAlike(const Expr &a, const Expr &b,
                                   std::optional<ScalarType> expected) {
    if (expected)
      return {typed(a, expected), typed(b, expected)};
    if (typesItself(a)) {
      Expr first = typed(a, std::nullopt);
      return {first, typed(b, first->type)};
    }
    if (typesItself(b)) {
      Expr second = typed(b, std::nullopt);
      return {typed(a, second->type), second};
    }
    return {typed(a, std::nullopt), typed(b, std::nullopt)};
  }

  const Token &at(const Expr &expr) const {
    auto found = at_.find(expr.get());
    return found == at_.end() ? peek() : found->second;
  }

  Expr typedExpr(std::optional<ScalarType> expected) { return typed(parseExpr(1), expected); }

  // -------------------------------------------------------- expressions ---

  // Untyped: literals as read (typed() gives them their context's type).
  Expr parseExpr(int minPrecedence) {
    Expr lhs = parseUnary();
    while (peek().kind == TokenKind::Symbol) {
      std::optional<BinaryOpKind> op = binaryOpNamed(peek().text);
      if (!op || binaryPrecedence(*op) < minPrecedence)
        break;
      const Token &opToken = take();
      Expr rhs = parseExpr(binaryPrecedence(*op) + 1);
      lhs = binary(*op, lhs, rhs, opToken);
    }
    return lhs;
  }

  Expr binary(BinaryOpKind op, Expr lhs, Expr rhs, const Token &at) {
    return locate(std::make_shared<Binary>(op, std::move(lhs), std::move(rhs), rangeAt(at)), at);
  }

  Expr parseUnary() {
    if (isSymbol("-")) {
      const Token &minus = take();
      Expr operand = parseUnary();
      bool suffixed = !untyped_.contains(operand.get());
      // Wrapping: the most negative i64 is read as its magnitude.
      if (const auto *integer = operand->as<IntImm>())
        return literal(
            std::make_shared<IntImm>(
                integer->type, static_cast<int64_t>(0 - static_cast<uint64_t>(integer->value))),
            minus, suffixed);
      if (const auto *number = operand->as<FloatImm>())
        return literal(std::make_shared<FloatImm>(number->type, -number->value), minus, suffixed);
      return std::make_shared<Unary>(UnaryOpKind::Neg, operand);
    }
    if (isSymbol("!")) {
      take();
      return std::make_shared<Unary>(UnaryOpKind::Not, parseUnary());
    }
    return parsePrimary();
  }

  std::optional<ScalarType> suffixType(const Token &token) {
    if (token.suffix.empty())
      return std::nullopt;
    std::optional<ScalarType> type = scalarTypeNamed(token.suffix);
    if (!type || *type == ScalarType::Bool)
      fail(token, "'" + token.suffix + "' is no numeric type (i32, i64, f32, f64)");
    return type;
  }

  Expr parsePrimary() {
    const Token &token = peek();
    switch (token.kind) {
    case TokenKind::Integer: {
      take();
      std::optional<ScalarType> type = suffixType(token);
      if (type && isFloat(*type))
        fail(token, "an integer literal of float type: write " + token.text + ".0");
      uint64_t magnitude = 0;
      if (std::from_chars(token.text.data(), token.text.data() + token.text.size(), magnitude).ec !=
          std::errc())
        fail(token, "integer literal '" + token.text + "' out of range");
      // The most negative i64 is read as its magnitude, then negated.
      if (magnitude > uint64_t(std::numeric_limits<int64_t>::max()) &&
          !(magnitude == uint64_t(1) << 63 && pos_ >= 2 && tokens_[pos_ - 2].text == "-"))
        fail(token, "integer literal '" + token.text + "' out of range");
      return literal(
          std::make_shared<IntImm>(type.value_or(ScalarType::I64), static_cast<int64_t>(magnitude)),
          token, type.has_value());
    }
    case TokenKind::Float: {
      take();
      std::optional<ScalarType> type = suffixType(token);
      if (type && !isFloat(*type))
        fail(token, "a float literal of integer type");
      double value = 0;
      std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
      return literal(std::make_shared<FloatImm>(type.value_or(ScalarType::F32), value), token,
                     type.has_value());
    }
    case TokenKind::Name:
      return parseNamed();
    case TokenKind::Symbol:
      if (token.text == "(") {
        take();
        Expr inner = parseExpr(1);
        expectSymbol(")");
        return inner;
      }
      break;
    default:
      break;
    }
    fail(token, "expected an expression, found " + describeToken(token));
  }

  // An element of the buffer `token` names, its indices next.
  Expr parseLoad(const Token &token, bool speculative) {
    Buffer buffer = bufferNamed(token.text);
    std::vector<Expr> indices;
    while (isAttached("[")) {
      take();
      indices.push_back(parseExpr(1));
      expectSymbol("]");
    }
    if (indices.size() != buffer->shape.size())
      fail(token, "'" + token.text + "' has " + std::to_string(buffer->shape.size()) +
                      " dimensions, indexed by " + std::to_string(indices.size()));
    return locate(std::make_shared<Load>(buffer, std::move(indices), rangeAt(token), speculative),
                  token);
  }

  Expr parseNamed() {
    const Token &token = take();
    const std::string &name = token.text;
    if (isAttached("("))
      return parseCall(token);
    if (name == "true" || name == "false")
      return std::make_shared<BoolImm>(name == "true");
    // `speculative A[i]` (ir::Load::speculative): the word, then a buffer.
    if (name == "speculative" && peek().kind == TokenKind::Name && bufferNamed(peek().text))
      return parseLoad(take(), true);
    if (std::optional<ScalarType> type = varType(name))
      return std::make_shared<Var>(*type, name);
    if (bufferNamed(name))
      return parseLoad(token, false);

    // inf and nan, as std::to_chars writes them: `inf`, `inf_f64`.
    for (std::string_view special : {"inf", "nan"})
      if (name == special || name.starts_with(std::string(special) + "_")) {
        Token number = token;
        number.suffix = name.size() > special.size() ? name.substr(special.size() + 1) : "";
        std::optional<ScalarType> type = suffixType(number);
        double value = special == "inf" ? std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::quiet_NaN();
        return literal(std::make_shared<FloatImm>(type.value_or(ScalarType::F32), value), token,
                       type.has_value());
      }
    fail(token, "no variable or array named '" + name + "' here");
  }

  std::vector<Expr> parseArguments() {
    expectSymbol("(");
    std::vector<Expr> args;
    if (!isSymbol(")")) {
      args.push_back(parseExpr(1));
      while (isSymbol(",")) {
        take();
        args.push_back(parseExpr(1));
      }
    }
    expectSymbol(")");
    return args;
  }

  Expr parseCall(const Token &token) {
    const std::string &name = token.text;
    std::vector<Expr> args = parseArguments();
    auto arity = [&](size_t count) {
      if (args.size() != count)
        fail(token, "'" + name + "' takes " + std::to_string(count) + " operand" +
                        (count == 1 ? "" : "s") + ", given " + std::to_string(args.size()));
    };
    if (std::optional<ScalarType> type = scalarTypeNamed(name)) {
      arity(1);
      return std::make_shared<Cast>(*type, args[0]);
    }
    if (name == "select") {
      arity(3);
      return std::make_shared<Select>(args[0], args[1], args[2]);
    }
    if (name == "min" || name == "max") {
      arity(2);
      return binary(name == "min" ? BinaryOpKind::Min : BinaryOpKind::Max, args[0], args[1], token);
    }
    if (std::optional<Builtin> builtin = builtinNamed(name)) {
      arity(builtinArity(*builtin));
      return locate(std::make_shared<Call>(args[0]->type, *builtin, std::move(args)), token);
    }
    fail(token, "'" + name + "' is no type, builtin, select, min or max");
  }

  std::vector<Expr> parseIndices() {
    std::vector<Expr> indices;
    while (isAttached("[")) {
      take();
      indices.push_back(typedExpr(std::nullopt));
      expectSymbol("]");
    }
    return indices;
  }

  std::vector<Expr> parseIndicesOf(const Buffer &buffer, const Token &at) {
    std::vector<Expr> indices = parseIndices();
    if (indices.size() != buffer->shape.size())
      fail(at, "'" + buffer->name + "' has " + std::to_string(buffer->shape.size()) +
                   " dimensions, indexed by " + std::to_string(indices.size()));
    return indices;
  }

  // `[min, end)`: end is `extent` when min is 0, else `min + extent`; the
  // two bounds typed by each other (IRPrinter.cpp, rangeText).
  std::pair<Expr, Expr> parseRange() {
    expectSymbol("[");
    Expr min = parseExpr(1);
    expectSymbol(",");
    const Token &endToken = peek();
    Expr end = parseExpr(1);
    expectSymbol(")");
    Expr extent = end;
    const auto *zero = min->as<IntImm>();
    if (!zero || zero->value != 0) {
      const auto *sum = end->as<Binary>();
      if (!sum || sum->op != BinaryOpKind::Add || toString(sum->lhs) != toString(min))
        fail(endToken, "a range's end must be written `" + toString(min) +
                           " + extent`, as its start and the iterations after it");
      extent = sum->rhs;
    }
    auto [typedMin, typedExtent] = typedAlike(min, extent, std::nullopt);
    if (!isInteger(typedMin->type) || typedMin->type != typedExtent->type)
      fail(endToken, "a range's bounds must be integers of one type");
    return {typedMin, typedExtent};
  }

  // --------------------------------------------------------- operators ---

  // `+=`, `min=`, ... or a user's `name(a, b => combine[, commutes])=`,
  // over operands of `type`.
  ReduceOperator parseOperator(ScalarType type) {
    ReduceOperator op;
    const Token &token = peek();
    static const std::map<std::string, ReduceOperator::Kind> kBuiltins = {
        {"+", ReduceOperator::Kind::Add},   {"*", ReduceOperator::Kind::Mul},
        {"min", ReduceOperator::Kind::Min}, {"max", ReduceOperator::Kind::Max},
        {"&&", ReduceOperator::Kind::And},  {"||", ReduceOperator::Kind::Or}};
    if (auto builtin = kBuiltins.find(token.text); builtin != kBuiltins.end() && isSymbol("=", 1)) {
      take();
      take();
      op.kind = builtin->second;
      return op;
    }
    if (token.kind != TokenKind::Name)
      fail(token, "expected a reduction operator (+=, *=, min=, max=, &&=, ||=, or a user's "
                  "`name(a, b => combine)=`), found " +
                      describeToken(token));
    op.kind = ReduceOperator::Kind::User;
    op.userName = take().text;
    expectSymbol("(");
    op.lhsVar = takeName("the operator's first operand");
    expectSymbol(",");
    op.rhsVar = takeName("the operator's second operand");
    expectSymbol("=>");
    op.combine = withVar(op.lhsVar, type,
                         [&] { return withVar(op.rhsVar, type, [&] { return typedExpr(type); }); });
    if (isSymbol(",")) {
      take();
      expectName("commutes");
      op.userCommutes = true;
    }
    expectSymbol(")");
    expectSymbol("=");
    return op;
  }

  // -------------------------------------------------------- statements ---

  // Statements up to the `}` (or `yield`) that ends their block. A let and
  // an allocation hold the statements after them, as the printer writes
  // their bodies on at their own indentation.
  Stmt parseStatements() {
    std::vector<Stmt> stmts;
    while (!isSymbol("}") && !isName("yield") && peek().kind != TokenKind::End) {
      if (isName("let") && !startsStore(1)) {
        take();
        std::string var = takeName("the let's name");
        expectSymbol("=");
        Expr value = typedExpr(std::nullopt);
        Stmt body = withVar(var, value->type, [&] { return parseStatements(); });
        stmts.push_back(std::make_shared<LetStmt>(var, value, body));
        break;
      }
      if (startsAllocation()) {
        Buffer buffer = parseBufferDeclaration();
        if (inHostFunction_)
          hostBuffers_[buffer->name] = buffer;
        Stmt body = withBuffer(buffer, [&] { return parseStatements(); });
        stmts.push_back(std::make_shared<Allocate>(buffer, body));
        break;
      }
      stmts.push_back(parseStatement());
    }
    if (isName("yield") && yieldType_) {
      take();
      yielded_ = typedExpr(*yieldType_);
      yieldType_.reset();
    }
    return makeBlock(std::move(stmts));
  }

  // A name followed by `=` or an attached `[` begins a store, whatever the
  // name (an array may be called `scan`).
  bool startsStore(size_t ahead) const {
    return isSymbol("=", ahead) || (isSymbol("[", ahead) && !peek(ahead).spaced);
  }

  bool startsAllocation() const {
    return (isName("global") || isName("shared") || isName("register")) &&
           peek(1).kind == TokenKind::Name && scalarTypeNamed(peek(1).text).has_value();
  }

  Stmt parseBlockBody() {
    expectSymbol("{");
    Stmt body = parseStatements();
    expectSymbol("}");
    return body;
  }

  Stmt parseStatement() {
    const Token &token = peek();
    if (token.kind != TokenKind::Name)
      fail(token, "expected a statement, found " + describeToken(token));
    if (startsStore(1))
      return parseStore();
    const std::string &word = token.text;
    if (word == "if")
      return parseIf();
    if (word == "reduce")
      return parseReduce();
    if (word == "scan")
      return parseScan();
    if (word == "atomic")
      return parseAtomic();
    if (word == "check")
      return parseCheck();
    if (word == "launch")
      return parseLaunch();
    if (word == "async_copy")
      return parseAsyncCopy();
    if (word == "barrier") {
      take();
      return std::make_shared<Barrier>();
    }
    if (word == "async_commit") {
      take();
      return std::make_shared<AsyncCommit>();
    }
    if (word == "async_wait") {
      take();
      return std::make_shared<AsyncWait>(static_cast<int>(takeInteger("a count of groups")));
    }
    if (word == "for" || isName("for", 1))
      return parseFor();
    fail(token, "expected a statement, found " + describeToken(token));
  }

  Stmt parseIf() {
    expectName("if");
    expectSymbol("(");
    Expr cond = typedExpr(ScalarType::Bool);
    expectSymbol(")");
    Stmt thenCase = parseBlockBody();
    Stmt elseCase;
    if (isName("else")) {
      take();
      elseCase = parseBlockBody();
    }
    return std::make_shared<IfThenElse>(cond, thenCase, elseCase);
  }

  Stmt parseFor() {
    const Token &kindToken = take();
    ForKind kind = ForKind::Serial;
    int dim = 0;
    if (kindToken.text != "for") {
      std::string kindName = kindToken.text;
      if (size_t dot = kindName.find('.'); dot != std::string::npos) {
        std::string axis = kindName.substr(dot + 1);
        kindName.resize(dot);
        if (axis.size() != 1 || std::string_view("xyz").find(axis[0]) == std::string_view::npos)
          fail(kindToken, "a GPU loop's axis is x, y or z");
        dim = axis[0] - 'x';
      }
      bool known = false;
      for (ForKind candidate : {ForKind::Parallel, ForKind::Unrolled, ForKind::Vectorized,
                                ForKind::GpuBlock, ForKind::GpuThread})
        if (kindName == forKindName(candidate)) {
          kind = candidate;
          known = true;
        }
      bool gpu = kind == ForKind::GpuBlock || kind == ForKind::GpuThread;
      if (!known || gpu != (kindToken.text.find('.') != std::string::npos))
        fail(kindToken, "'" + kindToken.text +
                            "' is no loop kind (parallel, unrolled, vectorized, gpu_block.x, "
                            "gpu_thread.x, ...)");
      expectName("for");
    }
    std::string var = takeName("the loop's variable");
    expectName("in");
    auto [min, extent] = parseRange();
    Stmt body = withVar(var, min->type, [&] { return parseBlockBody(); });
    return std::make_shared<For>(var, min, extent, kind, dim, body, rangeAt(kindToken));
  }

  Stmt parseStore() {
    const Token &token = peek();
    Buffer buffer = takeBuffer();
    std::vector<Expr> indices = parseIndicesOf(buffer, token);
    expectSymbol("=");
    if (isName("shuffle_xor") && isAttached("(", 1)) {
      take();
      expectSymbol("(");
      Expr value = typedExpr(buffer->element);
      expectSymbol(",");
      int laneMask = static_cast<int>(takeInteger("a lane mask"));
      expectSymbol(")");
      return std::make_shared<WarpShuffle>(written(buffer), value, laneMask);
    }
    Expr value = typedExpr(buffer->element);
    std::shared_ptr<const ReductionStep> step;
    if (isSymbol("(") && isName("reduction", 1)) {
      take();
      take();
      expectName("step");
      ReductionStep reduction;
      reduction.op = parseOperator(buffer->element);
      expectName("from");
      reduction.neutral = typedExpr(buffer->element);
      expectSymbol(")");
      step = std::make_shared<ReductionStep>(std::move(reduction));
    }
    return std::make_shared<Store>(written(buffer), std::move(indices), value, rangeAt(token),
                                   step);
  }

  // The value of a reduce's or a scan's point: `: value`, or a block of
  // statements ending in `yield value`.
  std::pair<Stmt, Expr> parsePerPoint(ScalarType type) {
    if (isSymbol(":")) {
      take();
      return {nullptr, typedExpr(type)};
    }
    expectSymbol("{");
    std::optional<ScalarType> outerType = std::exchange(yieldType_, type);
    Expr outerValue = std::exchange(yielded_, nullptr);
    Stmt setup = parseStatements();
    if (!yielded_)
      fail(peek(), "expected `yield` and the point's value, found " + describeToken(peek()));
    Expr value = std::exchange(yielded_, outerValue);
    yieldType_ = outerType;
    expectSymbol("}");
    return {setup, value};
  }

  Stmt parseReduce() {
    SourceRange source = rangeAt(peek());
    expectName("reduce");
    const Token &token = peek();
    Buffer accumulator = takeBuffer();
    std::vector<Expr> indices = parseIndicesOf(accumulator, token);
    ReduceOperator op = parseOperator(accumulator->element);
    expectName("from");
    Expr neutral = typedExpr(accumulator->element);
    expectName("over");
    std::vector<Reduce::Loop> loops;
    std::pair<Stmt, Expr> perPoint;
    // Each loop's variable is bound for the loops after it and the value.
    std::function<void()> nextLoop = [&] {
      std::string var = takeName("a reduction loop's variable");
      expectName("in");
      auto [min, extent] = parseRange();
      loops.push_back(Reduce::Loop{var, min, extent});
      withVar(var, min->type, [&] {
        if (isSymbol(",")) {
          take();
          nextLoop();
        } else {
          perPoint = parsePerPoint(accumulator->element);
        }
        return 0;
      });
    };
    nextLoop();
    return std::make_shared<Reduce>(written(accumulator), std::move(indices), std::move(op),
                                    neutral, std::move(loops), perPoint.first, perPoint.second,
                                    source);
  }

  Stmt parseScan() {
    SourceRange source = rangeAt(peek());
    expectName("scan");
    const Token &token = peek();
    Buffer target = takeBuffer();
    // The indices may use the scan's variable, bound after them: read
    // them again once it is.
    size_t indicesAt = pos_;
    while (isAttached("[")) {
      int depth = 0;
      do {
        if (isSymbol("["))
          ++depth;
        else if (isSymbol("]"))
          --depth;
        take();
      } while (depth > 0 && peek().kind != TokenKind::End);
    }
    ReduceOperator op = parseOperator(target->element);
    expectName("from");
    Expr neutral = typedExpr(target->element);
    expectName("over");
    std::string var = takeName("the scan's variable");
    expectName("in");
    auto [min, extent] = parseRange();
    return withVar(var, min->type, [&] {
      auto [setup, value] = parsePerPoint(target->element);
      size_t after = pos_;
      pos_ = indicesAt;
      std::vector<Expr> indices = parseIndicesOf(target, token);
      pos_ = after;
      return Stmt(std::make_shared<Scan>(written(target), std::move(indices), op, neutral,
                                         Reduce::Loop{var, min, extent}, setup, value, source,
                                         rangeAt(token)));
    });
  }

  Stmt parseAtomic() {
    expectName("atomic");
    const Token &token = peek();
    Buffer buffer = takeBuffer();
    std::vector<Expr> indices = parseIndicesOf(buffer, token);
    ReduceOperator op = parseOperator(buffer->element);
    Expr value = typedExpr(buffer->element);
    return std::make_shared<AtomicUpdate>(written(buffer), std::move(indices), std::move(op), value,
                                          rangeAt(token));
  }

  Stmt parseCheck() {
    SourceRange source = rangeAt(peek());
    expectName("check");
    expectSymbol("(");
    Expr condition = typedExpr(ScalarType::Bool);
    expectSymbol(")");
    expectName("else");
    expectName("error");
    if (peek().kind != TokenKind::String)
      fail(peek(), "expected the check's message in double quotes, found " + describeToken(peek()));
    std::string message = take().text;
    std::vector<Expr> values;
    if (isName("with")) {
      take();
      do {
        if (!values.empty())
          expectSymbol(",");
        expectSymbol("{");
        const Token &slot = peek();
        if (takeInteger("a value's number") != static_cast<int64_t>(values.size()))
          fail(slot, "the check's values are numbered {0}, {1} in order");
        expectSymbol("}");
        expectSymbol("=");
        values.push_back(typedExpr(std::nullopt));
      } while (isSymbol(","));
    }
    return std::make_shared<Check>(condition, message, std::move(values), source);
  }

  Stmt parseAsyncCopy() {
    expectName("async_copy");
    const Token &targetToken = peek();
    Buffer target = takeBuffer();
    std::vector<Expr> targetIndices = parseIndicesOf(target, targetToken);
    expectSymbol("<-");
    const Token &sourceToken = peek();
    Buffer source = takeBuffer();
    std::vector<Expr> sourceIndices = parseIndicesOf(source, sourceToken);
    const Token &count = peek();
    std::string elements = takeName("the element count (x4)");
    int64_t elementCount = 0;
    if (elements.size() < 2 || elements[0] != 'x' ||
        std::from_chars(elements.data() + 1, elements.data() + elements.size(), elementCount).ec !=
            std::errc())
      fail(count, "expected the element count (x4), found '" + elements + "'");
    expectSymbol("(");
    takeInteger("the copy's bytes");
    expectName("bytes");
    expectSymbol(",");
    expectName("valid");
    Expr valid = typedExpr(std::nullopt);
    expectSymbol(")");
    return std::make_shared<AsyncCopy>(written(target), std::move(targetIndices), source,
                                       std::move(sourceIndices), static_cast<int>(elementCount),
                                       valid);
  }

  std::vector<Expr> parseExtents3(std::string_view what) {
    expectName(what);
    expectSymbol("(");
    std::vector<Expr> extents;
    for (int i = 0; i < 3; ++i) {
      if (i)
        expectSymbol(",");
      extents.push_back(typedExpr(std::nullopt));
    }
    expectSymbol(")");
    return extents;
  }

  Stmt parseLaunch() {
    SourceRange source = rangeAt(peek());
    expectName("launch");
    std::string kernel = takeName("the kernel's name");
    expectSymbol("<<<");
    std::vector<Expr> grid = parseExtents3("grid");
    expectSymbol(",");
    std::vector<Expr> block = parseExtents3("block");
    expectSymbol(">>>");
    expectSymbol("(");
    std::vector<Buffer> buffers;
    while (!isSymbol(";")) {
      if (!buffers.empty())
        expectSymbol(",");
      buffers.push_back(takeBuffer());
    }
    expectSymbol(";");
    std::vector<Expr> scalars;
    while (!isSymbol(")")) {
      if (!scalars.empty())
        expectSymbol(",");
      scalars.push_back(typedExpr(std::nullopt));
    }
    expectSymbol(")");
    launchedBuffers_[kernel] = buffers;
    return std::make_shared<Launch>(kernel, std::move(grid), std::move(block), std::move(buffers),
                                    std::move(scalars), source);
  }

  // ---------------------------------------------------- declarations ---

  // `shared f32 tile[8][33]`: memory space, element type, name, extents.
  Buffer parseBufferDeclaration() {
    auto buffer = std::make_shared<BufferInfo>();
    const Token &memory = take();
    for (MemorySpace space : {MemorySpace::Global, MemorySpace::Shared, MemorySpace::Register})
      if (memory.text == memorySpaceName(space))
        buffer->memory = space;
    buffer->element = takeType();
    buffer->name = takeName("the array's name");
    while (isAttached("[")) {
      take();
      buffer->shape.push_back(typedExpr(std::nullopt));
      expectSymbol("]");
    }
    return buffer;
  }

  // `(buffers; scalars)`: the scalars are read first, as the buffers'
  // extents name them. Returns the buffers as declared.
  std::vector<Buffer> parseParameters(std::vector<ScalarParam> &scalars) {
    expectSymbol("(");
    size_t buffersAt = pos_;
    int depth = 0;
    while (!(depth == 0 && isSymbol(";"))) {
      if (peek().kind == TokenKind::End)
        fail(peek(), "expected ';' between the arrays and the scalars of a parameter list");
      if (isSymbol("(") || isSymbol("["))
        ++depth;
      else if (isSymbol(")") || isSymbol("]"))
        --depth;
      take();
    }
    take();
    while (!isSymbol(")")) {
      if (!scalars.empty())
        expectSymbol(",");
      std::string name = takeName("a scalar parameter's name");
      expectSymbol(":");
      scalars.push_back(ScalarParam{name, takeType()});
      vars_[name].push_back(scalars.back().type);
    }
    size_t end = pos_;
    pos_ = buffersAt;
    std::vector<Buffer> buffers;
    while (!isSymbol(";")) {
      if (!buffers.empty())
        expectSymbol(",");
      if (!startsAllocation())
        fail(peek(),
             "expected an array parameter (global f32 A[N]), found " + describeToken(peek()));
      Buffer buffer = parseBufferDeclaration();
      buffer->isParameter = true;
      if (isSymbol("(") && isName("written", 1)) {
        take();
        take();
        expectSymbol(")");
        buffer->isWritten = true;
      }
      buffers.push_back(buffer);
    }
    pos_ = end;
    expectSymbol(")");
    return buffers;
  }

  Function parseFunctionHeaderAndBody(const std::vector<size_t> &sizeChoices) {
    Function function;
    expectName("func");
    function.name = takeName("the function's name");
    function.buffers = parseParameters(function.scalars);
    if (isName("bounds_checked")) {
      take();
      function.boundsChecked = true;
    }
    for (const Buffer &buffer : function.buffers) {
      buffers_[buffer->name].push_back(buffer);
      hostBuffers_[buffer->name] = buffer;
    }
    size_t bodyAt = pos_;
    for (size_t choice : sizeChoices) {
      pos_ = choice;
      bool holds = take().text == "true";
      Expr condition = typedExpr(ScalarType::Bool);
      if (peek().kind != TokenKind::SizeChoiceEnd)
        fail(peek(), "expected the end of the size choice, found " + describeToken(peek()));
      function.sizeChoices.push_back(Function::SizeChoice{condition, holds});
    }
    pos_ = bodyAt;
    inHostFunction_ = true;
    function.body = parseBlockBody();
    inHostFunction_ = false;
    vars_.clear();
    buffers_.clear();
    return function;
  }

  KernelFunc parseKernel() {
    KernelFunc kernel;
    expectName("kernel");
    const Token &kernelToken = peek();
    kernel.name = takeName("the kernel's name");
    std::vector<Buffer> declared = parseParameters(kernel.scalars);
    // The function's arrays, shared by identity as the passes make them:
    // those its launch passes (two arrays of a function may have one name,
    // in the branches of a choice between variants), else by name.
    auto launched = launchedBuffers_.find(kernel.name);
    for (size_t i = 0; i < declared.size(); ++i) {
      const Buffer &buffer = declared[i];
      Buffer shared = buffer;
      if (launched != launchedBuffers_.end() && i < launched->second.size())
        shared = launched->second[i];
      else if (auto host = hostBuffers_.find(buffer->name); host != hostBuffers_.end())
        shared = host->second;
      if (describe(*shared) != describe(*buffer))
        fail(kernelToken, "kernel '" + kernel.name + "' declares '" + describe(*buffer) +
                              "' where the function has '" + describe(*shared) + "'");
      kernel.buffers.push_back(shared);
      buffers_[shared->name].push_back(shared);
    }
    for (std::string_view hint : {"maxntid", "minctasm"})
      if (isName(hint)) {
        take();
        expectSymbol("(");
        int value = static_cast<int>(takeInteger("a count"));
        expectSymbol(")");
        (hint == "maxntid" ? kernel.maxThreadsPerBlock : kernel.minBlocksPerSM) = value;
      }
    kernel.body = parseBlockBody();
    vars_.clear();
    buffers_.clear();
    return kernel;
  }

  // A buffer the function allocates is written where some statement writes
  // it (BufferInfo::isWritten); a parameter says so itself.
  static const Buffer &written(const Buffer &buffer) {
    if (!buffer->isParameter)
      std::const_pointer_cast<BufferInfo>(buffer)->isWritten = true;
    return buffer;
  }

  std::vector<Token> tokens_;
  uint32_t file_;
  size_t pos_ = 0;
  std::map<std::string, std::vector<ScalarType>> vars_;
  std::map<std::string, std::vector<Buffer>> buffers_;
  // The host function's arrays by name (parameters and allocations), which
  // its kernels' parameters are.
  std::map<std::string, Buffer> hostBuffers_;
  // The arrays each kernel's launch passes, in its parameters' order.
  std::map<std::string, std::vector<Buffer>> launchedBuffers_;
  bool inHostFunction_ = false;
  // While a reduce's or scan's statements are read, the type of the value
  // their `yield` gives; the value is read where the statements end, inside
  // the lets and allocations among them.
  std::optional<ScalarType> yieldType_;
  Expr yielded_;
  std::set<const ExprNode *> untyped_;
  std::vector<Expr> located_; // every node at_ names, kept alive
  std::map<const ExprNode *, Token> at_;
};

} // namespace

Expected<Function> parseFunction(std::string_view text, uint32_t file) {
  Expected<std::vector<Token>> tokens = Lexer(text, file).tokens();
  if (!tokens)
    return std::unexpected(tokens.error());
  try {
    return Parser(std::move(*tokens), file).parseFile();
  } catch (const ParseFailure &failure) {
    return std::unexpected(failure.error);
  }
}

} // namespace loopc::ir
