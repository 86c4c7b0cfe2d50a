// The REPL's values and their evaluation (see ReplValues.h).
#include "driver/ReplValues.h"

#include "driver/Engines.h"
#include "driver/ReplDeviceValues.h"
#include "driver/Session.h"
#include "engine/Bindings.h"
#include "engine/Npy.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <expected>
#include <limits>
#include <optional>
#include <ostream>
#include <set>

namespace loopc::driver {

namespace {

// ---------------------------------------------------------------- tokens ---

struct Token {
  enum class Kind { Name, Number, String, Punct, End };
  Kind kind = Kind::End;
  std::string text;
  size_t offset = 0; // in the input
};

std::vector<Token> tokenize(const std::string &text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    size_t start = i;
    Token token;
    token.offset = start;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
        ++i;
      token.kind = Token::Kind::Name;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < text.size() &&
                std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      // Digits, a point (not a range's `..`), an exponent with its sign.
      auto continues = [&](size_t at) {
        char d = text[at];
        if (std::isdigit(static_cast<unsigned char>(d)))
          return true;
        if (d == '.')
          return at + 1 >= text.size() || text[at + 1] != '.';
        if (d == 'e' || d == 'E')
          return at + 1 < text.size() && (std::isdigit(static_cast<unsigned char>(text[at + 1])) ||
                                          text[at + 1] == '+' || text[at + 1] == '-');
        return (d == '+' || d == '-') && (text[at - 1] == 'e' || text[at - 1] == 'E');
      };
      while (i < text.size() && continues(i))
        ++i;
      token.kind = Token::Kind::Number;
    } else if (c == '"') {
      ++i;
      while (i < text.size() && text[i] != '"')
        ++i;
      i = std::min(text.size(), i + 1);
      token.kind = Token::Kind::String;
    } else {
      ++i;
      token.kind = Token::Kind::Punct;
    }
    token.text = text.substr(start, i - start);
    tokens.push_back(token);
  }
  Token end;
  end.offset = text.size();
  tokens.push_back(end);
  return tokens;
}

bool isPunct(const Token &token, const char *text) {
  return token.kind == Token::Kind::Punct && token.text == text;
}

// The index just past the bracket closing the one at `open`, or `open` when
// it never closes.
size_t closing(const std::vector<Token> &tokens, size_t open) {
  int depth = 0;
  for (size_t i = open; i < tokens.size(); ++i) {
    if (tokens[i].kind != Token::Kind::Punct)
      continue;
    char c = tokens[i].text[0];
    depth += c == '(' || c == '[' || c == '{';
    depth -= c == ')' || c == ']' || c == '}';
    if (depth == 0)
      return i + 1;
  }
  return open;
}

// The top-level comma-separated parts of the tokens in [begin, end), each
// as the range of its tokens.
std::vector<std::pair<size_t, size_t>> splitParts(const std::vector<Token> &tokens, size_t begin,
                                                  size_t end) {
  std::vector<std::pair<size_t, size_t>> parts;
  size_t partBegin = begin;
  for (size_t i = begin; i < end;) {
    if (tokens[i].kind == Token::Kind::Punct &&
        std::string("([{").find(tokens[i].text[0]) != std::string::npos) {
      i = std::max(i + 1, closing(tokens, i));
      continue;
    }
    if (isPunct(tokens[i], ",")) {
      parts.emplace_back(partBegin, i);
      partBegin = i + 1;
    }
    ++i;
  }
  if (partBegin < end)
    parts.emplace_back(partBegin, end);
  return parts;
}

// The text of the tokens in [begin, end) of `text`.
std::string textOf(const std::string &text, const std::vector<Token> &tokens, size_t begin,
                   size_t end) {
  return text.substr(tokens[begin].offset, tokens[end].offset - tokens[begin].offset);
}

// The text of each top-level comma-separated part of the tokens in
// [begin, end), from `text`.
std::vector<std::string> splitArguments(const std::string &text, const std::vector<Token> &tokens,
                                        size_t begin, size_t end) {
  std::vector<std::string> parts;
  for (auto [partBegin, partEnd] : splitParts(tokens, begin, end))
    parts.push_back(textOf(text, tokens, partBegin, partEnd));
  return parts;
}

std::string trimmed(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos)
    return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// The type text of `value` as a parameter of that shape: f32[3][4], i64.
std::string typeText(const HostArray &value) {
  std::string text = scalarTypeName(value.type);
  for (int64_t extent : value.shape)
    text += "[" + std::to_string(extent) + "]";
  return text;
}

// ------------------------------------------------------------- printing ---

std::string formatElement(const HostArray &value, size_t i) {
  switch (value.type) {
  case ScalarType::Bool:
    return value.getAsInt(i) ? "true" : "false";
  case ScalarType::I32:
  case ScalarType::I64:
    return std::to_string(value.getAsInt(i));
  case ScalarType::F32:
  case ScalarType::F64: {
    char text[64];
    auto [end, problem] = value.type == ScalarType::F32
                              ? std::to_chars(text, text + sizeof text, value.data<float>()[i])
                              : std::to_chars(text, text + sizeof text, value.data<double>()[i]);
    std::string shortest(text, problem == std::errc() ? end : text);
    // 2 prints as 2.0, so that a float reads as one.
    if (shortest.find_first_of(".einf") == std::string::npos)
      shortest += ".0";
    return shortest;
  }
  }
  return "?";
}

// Elements past this many along a dimension are shown as their first and
// last kEdge, around `...`.
constexpr int64_t kMostShown = 6;
constexpr int64_t kEdge = 3;

void formatRows(const HostArray &value, bool full, size_t dim, size_t offset, int indent,
                std::string &text) {
  int64_t extent = value.shape[dim];
  size_t stride = 1;
  for (size_t d = dim + 1; d < value.rank(); ++d)
    stride *= static_cast<size_t>(value.shape[d]);
  bool elided = !full && extent > kMostShown;
  text += "[";
  for (int64_t i = 0; i < extent; ++i) {
    if (elided && i == kEdge) {
      text += dim + 1 == value.rank() ? "..., " : "...,\n" + std::string(indent + 1, ' ');
      i = extent - kEdge - 1;
      continue;
    }
    if (dim + 1 == value.rank())
      text += formatElement(value, offset + static_cast<size_t>(i));
    else
      formatRows(value, full, dim + 1, offset + static_cast<size_t>(i) * stride, indent + 1, text);
    if (i + 1 < extent)
      text += dim + 1 == value.rank()
                  ? ", "
                  : "," + std::string(value.rank() - dim - 1, '\n') + std::string(indent + 1, ' ');
  }
  text += "]";
}

} // namespace

std::string formatValue(const HostArray &value, bool full) {
  if (value.rank() == 0)
    return formatElement(value, 0);
  std::string text = typeText(value) + " ";
  if (value.elementCount() == 0)
    return text + "[]";
  formatRows(value, full, 0, 0, static_cast<int>(text.size()), text);
  return text;
}

namespace {

// ------------------------------------------------------------ evaluation ---

// What an input failed with, in words ("<input>:1:5: error: ..." is made of
// it with the column when `offset` is known).
struct Failure {
  std::string message;
  std::optional<size_t> offset = std::nullopt; // in the input
};

template <typename T> using Result = std::expected<T, Failure>;

struct CheckedProgram {
  SourceManager sources;
  DiagnosticEngine diagnostics{sources};
  std::unique_ptr<Program> program;
};

// The session's definitions and `extra` (a kernel made for the input)
// checked as one program, or the first error, with its offset in the input
// when it lies in the input's text: that starts at column `extraColumn` of
// line `extraLine` of `extra` (1-based).
Result<std::unique_ptr<CheckedProgram>> checkWith(const ReplProgram &session,
                                                  const std::string &extra, uint32_t extraLine,
                                                  size_t extraColumn) {
  auto checked = std::make_unique<CheckedProgram>();
  std::string text = session.definitions + extra;
  uint32_t firstExtraLine =
      static_cast<uint32_t>(std::ranges::count(session.definitions, '\n')) + extraLine;
  uint32_t file = static_cast<uint32_t>(checked->sources.fileCount());
  checked->program = loadProgramFromText("<session>", std::move(text), checked->sources,
                                         checked->diagnostics, session.options);
  if (checked->program && checkProgramAndSchedules(*checked->program, checked->diagnostics) &&
      !checked->diagnostics.hasErrors())
    return checked;
  for (const Diagnostic &diagnostic : checked->diagnostics.diagnostics()) {
    if (diagnostic.severity != Severity::Error)
      continue;
    Failure failure{diagnostic.message};
    const SourceLoc &begin = diagnostic.range.begin;
    if (diagnostic.range.valid() && begin.file == file && begin.line == firstExtraLine &&
        begin.col >= extraColumn)
      failure.offset = begin.col - extraColumn;
    return std::unexpected(failure);
  }
  return std::unexpected(Failure{"the input does not check"});
}

class Evaluator {
public:
  // `gpu`: the GPU memory of the session's values, where there is some.
  Evaluator(std::map<std::string, HostArray> &values, const ReplProgram &program,
            const std::string &device, ReplDeviceValues *gpu)
      : values_(values), program_(program), device_(device), gpu_(gpu) {}

  // The values of the right-hand side `text` (one, or a kernel's outputs by
  // parameter name, in order), starting at `offset` in the input.
  Result<std::vector<std::pair<std::string, HostArray>>> evaluate(const std::string &text,
                                                                  size_t offset) {
    offset_ = offset;
    std::vector<Token> tokens = tokenize(text);
    if (tokens.size() == 1)
      return std::unexpected(Failure{"nothing to evaluate", offset});
    const Token &first = tokens[0];
    if (isPunct(first, "[") && closing(tokens, 0) == tokens.size() - 1) {
      auto literal = arrayLiteral(text, tokens, std::nullopt);
      if (!literal)
        return std::unexpected(literal.error());
      return single(std::move(*literal));
    }
    bool called = first.kind == Token::Kind::Name && isPunct(tokens[1], "(") &&
                  closing(tokens, 1) == tokens.size() - 1;
    if (called) {
      std::vector<std::string> arguments = splitArguments(text, tokens, 2, tokens.size() - 2);
      if (auto converted = convertedArray(first.text, text, tokens)) {
        if (!*converted)
          return std::unexpected(converted->error());
        return single(std::move(**converted));
      }
      if (first.text == "save" && !kernelNamed("save"))
        return save(arguments);
      if (auto made = construct(first.text, arguments)) {
        if (!*made)
          return std::unexpected(made->error());
        return single(std::move(**made));
      }
      if (auto kernel = kernelNamed(first.text))
        return callKernel(*kernel, arguments);
    }
    if (first.kind == Token::Kind::Name && values_.contains(first.text)) {
      if (tokens.size() == 2)
        return single(values_.at(first.text));
      if (isPunct(tokens[1], "[") && closing(tokens, 1) == tokens.size() - 1 &&
          isPart(values_.at(first.text), text, tokens)) {
        auto whole = onHost(values_.at(first.text));
        if (!whole)
          return std::unexpected(whole.error());
        return part(*whole, text, tokens);
      }
    }
    return expression(text);
  }

private:
  static Result<std::vector<std::pair<std::string, HostArray>>> single(HostArray value) {
    std::vector<std::pair<std::string, HostArray>> result;
    result.emplace_back("", std::move(value));
    return result;
  }

  Failure fail(std::string message) const { return Failure{std::move(message), offset_}; }
  Failure failAt(std::string message, const Token &token) const {
    return Failure{std::move(message), offset_ + token.offset};
  }

  // An element of an array literal: a number, true, false or inf as typed
  // (a literal takes the array's type), or a value evaluated (with its own).
  struct LiteralElement {
    enum class Kind { Integer, Float, Bool, Evaluated } kind = Kind::Integer;
    int64_t integer = 0;
    double number = 0;
    HostArray value; // Evaluated
  };

  // Collects the elements of the list whose '[' is tokens[open], at `depth`
  // of the nesting, into `elements` (C order), checking that its extent is
  // the one `shape` has at that depth (set by the first list there).
  Result<void> collectLiteral(const std::string &text, const std::vector<Token> &tokens,
                              size_t open, size_t depth, std::vector<int64_t> &shape,
                              std::optional<size_t> &rank, std::vector<LiteralElement> &elements) {
    std::vector<std::pair<size_t, size_t>> parts =
        splitParts(tokens, open + 1, closing(tokens, open) - 1);
    if (depth == shape.size())
      shape.push_back(static_cast<int64_t>(parts.size()));
    else if (shape[depth] != static_cast<int64_t>(parts.size()))
      return std::unexpected(failAt("this list has " + std::to_string(parts.size()) +
                                        (parts.size() == 1 ? " element" : " elements") +
                                        " where the first list at its depth has " +
                                        std::to_string(shape[depth]) +
                                        ": the rows of an array are alike",
                                    tokens[open]));
    for (auto [begin, end] : parts) {
      bool list = isPunct(tokens[begin], "[") && closing(tokens, begin) == end;
      // The first value met sets the rank; every other is at its depth.
      if (!rank && !list)
        rank = depth + 1;
      if (rank && list != (depth + 1 < *rank))
        return std::unexpected(failAt("a list mixes values and lists: the elements of an array "
                                      "are all at one depth",
                                      tokens[begin]));
      if (list) {
        if (auto collected = collectLiteral(text, tokens, begin, depth + 1, shape, rank, elements);
            !collected)
          return collected;
        continue;
      }
      auto element = literalElement(text, tokens, begin, end);
      if (!element)
        return std::unexpected(element.error());
      elements.push_back(std::move(*element));
    }
    return {};
  }

  Result<LiteralElement> literalElement(const std::string &text, const std::vector<Token> &tokens,
                                        size_t begin, size_t end) {
    LiteralElement element;
    bool negative = isPunct(tokens[begin], "-") && end == begin + 2;
    const Token &last = tokens[end - 1];
    if (end == begin + 1 + negative) {
      if (last.kind == Token::Kind::Number) {
        bool integral = last.text.find_first_of(".eE") == std::string::npos;
        if (integral) {
          std::string digits = (negative ? "-" : "") + last.text;
          auto [at, error] =
              std::from_chars(digits.data(), digits.data() + digits.size(), element.integer);
          if (error != std::errc() || at != digits.data() + digits.size())
            return std::unexpected(failAt("'" + digits + "' does not fit in i64", last));
          element.number = static_cast<double>(element.integer);
          return element;
        }
        element.kind = LiteralElement::Kind::Float;
        element.number = std::strtod(last.text.c_str(), nullptr) * (negative ? -1 : 1);
        return element;
      }
      if (last.text == "inf") {
        element.kind = LiteralElement::Kind::Float;
        element.number = negative ? -HUGE_VAL : HUGE_VAL;
        return element;
      }
      if (!negative && (last.text == "true" || last.text == "false")) {
        element.kind = LiteralElement::Kind::Bool;
        element.integer = last.text == "true";
        return element;
      }
    }
    std::string part = textOf(text, tokens, begin, end);
    auto value = argument(part);
    if (!value)
      return std::unexpected(value.error());
    if (value->rank() != 0)
      return std::unexpected(failAt("'" + trimmed(part) + "' is an array of " + typeText(*value) +
                                        ": an element of a list is one value (nest lists "
                                        "for more dimensions)",
                                    tokens[begin]));
    element.kind = LiteralElement::Kind::Evaluated;
    element.value = std::move(*value);
    return element;
  }

  // `[1, 2, 3]`, `[[1.5, 2], [3, 4]]`: an array of the nesting's shape. Its
  // type is `type` when given (`f32([1, 2])`), else the language's: the
  // widest type of the values evaluated in it (floats before integers),
  // f64 when a number has a point and nothing else says, i64 for integers
  // alone, bool for true and false.
  Result<HostArray> arrayLiteral(const std::string &text, const std::vector<Token> &tokens,
                                 std::optional<ScalarType> type, size_t open = 0) {
    std::vector<int64_t> shape;
    std::vector<LiteralElement> elements;
    std::optional<size_t> rank;
    if (auto collected = collectLiteral(text, tokens, open, 0, shape, rank, elements); !collected)
      return std::unexpected(collected.error());
    if (elements.empty() && !type)
      return std::unexpected(failAt("an empty list has no elements to give it a type: say it, "
                                    "as f64([]) or zeros(f64, [0])",
                                    tokens[open]));
    using Kind = LiteralElement::Kind;
    auto width = [](ScalarType t) {
      switch (t) {
      case ScalarType::Bool:
        return 0;
      case ScalarType::I32:
        return 1;
      case ScalarType::I64:
        return 2;
      case ScalarType::F32:
        return 3;
      default:
        return 4;
      }
    };
    bool bools = false, numbers = false, floats = false;
    std::optional<ScalarType> widest;
    for (const LiteralElement &element : elements) {
      ScalarType elementType = element.kind == Kind::Evaluated ? element.value.type
                               : element.kind == Kind::Bool    ? ScalarType::Bool
                               : element.kind == Kind::Float   ? ScalarType::F64
                                                               : ScalarType::I64;
      (elementType == ScalarType::Bool ? bools : numbers) = true;
      floats |= element.kind == Kind::Float;
      if (element.kind == Kind::Evaluated && (!widest || width(elementType) > width(*widest)))
        widest = elementType;
    }
    if (bools && numbers && !type)
      return std::unexpected(failAt("a list mixes bools and numbers: convert one, as "
                                    "f64([...]) does",
                                    tokens[open]));
    if (!type) {
      if (bools)
        type = ScalarType::Bool;
      else if (widest && (isFloat(*widest) || !floats))
        type = *widest;
      else
        type = floats ? ScalarType::F64 : ScalarType::I64;
    }
    if (isInteger(*type) || *type == ScalarType::Bool)
      for (const LiteralElement &element : elements)
        if (element.kind == Kind::Float)
          return std::unexpected(failAt(
              "a list of " + std::string(scalarTypeName(*type)) + " has an element with a point: " +
                  std::string(scalarTypeName(*type)) + " takes whole numbers",
              tokens[open]));
    HostArray array(*type, shape);
    for (size_t i = 0; i < elements.size(); ++i) {
      const LiteralElement &element = elements[i];
      bool integral = element.kind == Kind::Integer || element.kind == Kind::Bool ||
                      (element.kind == Kind::Evaluated && !isFloat(element.value.type));
      int64_t whole = element.kind == Kind::Evaluated ? element.value.getAsInt(0) : element.integer;
      double number =
          element.kind == Kind::Evaluated ? element.value.getAsDouble(0) : element.number;
      storeElement(array, i, integral, whole, number);
    }
    return array;
  }

  // Element i of `array` set to a whole number (exact) or a float, converted
  // as the language converts: an integer type keeps a whole number's low
  // bits and truncates a float toward zero, saturating (NaN gives 0).
  static void storeElement(HostArray &array, size_t i, bool integral, int64_t whole,
                           double number) {
    auto truncated = [&] {
      constexpr double lowest = -9223372036854775808.0; // -2^63, exact
      if (std::isnan(number))
        return int64_t{0};
      if (number <= lowest)
        return std::numeric_limits<int64_t>::min();
      if (number >= -lowest)
        return std::numeric_limits<int64_t>::max();
      return static_cast<int64_t>(number);
    };
    switch (array.type) {
    case ScalarType::I64:
      array.data<int64_t>()[i] = integral ? whole : truncated();
      return;
    case ScalarType::I32:
      if (integral)
        array.data<int32_t>()[i] = static_cast<int32_t>(whole);
      else
        array.data<int32_t>()[i] = static_cast<int32_t>(std::clamp<int64_t>(
            truncated(), std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
      return;
    case ScalarType::Bool:
      array.setFromDouble(i, integral ? (whole != 0) : (number != 0));
      return;
    default:
      array.setFromDouble(i, integral ? static_cast<double>(whole) : number);
    }
  }

  // `T([...])`, an array literal of type T, or `T(A)`, a copy of the array
  // value A with its elements converted to T (as the language converts a
  // scalar); none for another call (a scalar's conversion is the
  // language's).
  std::optional<Result<HostArray>> convertedArray(const std::string &name, const std::string &text,
                                                  const std::vector<Token> &tokens) {
    std::optional<ScalarType> type = scalarTypeNamed(name);
    if (!type || kernelNamed(name))
      return std::nullopt;
    size_t close = tokens.size() - 2; // the ')' closing tokens[1]
    if (isPunct(tokens[2], "[") && closing(tokens, 2) == close)
      return arrayLiteral(text, tokens, type, 2);
    if (close != 3 || tokens[2].kind != Token::Kind::Name || !values_.contains(tokens[2].text) ||
        values_.at(tokens[2].text).rank() == 0)
      return std::nullopt;
    auto onHostSource = onHost(values_.at(tokens[2].text));
    if (!onHostSource)
      return std::unexpected(onHostSource.error());
    const HostArray &source = *onHostSource;
    HostArray converted(*type, source.shape);
    for (size_t i = 0; i < source.elementCount(); ++i)
      storeElement(converted, i, !isFloat(source.type), source.getAsInt(i), source.getAsDouble(i));
    return converted;
  }

  // One argument: a value's name, else evaluated in turn (a number, an
  // expression, an array made from nothing).
  Result<HostArray> argument(const std::string &text) {
    std::string name = trimmed(text);
    if (auto found = values_.find(name); found != values_.end())
      return found->second;
    Evaluator inner(values_, program_, device_, gpu_);
    auto evaluated = inner.evaluate(name, offset_);
    if (!evaluated)
      return std::unexpected(evaluated.error());
    if (evaluated->size() != 1)
      return std::unexpected(fail("'" + name + "' gives several values where one is wanted"));
    return std::move(evaluated->front().second);
  }

  Result<int64_t> integerArgument(const std::string &text) {
    auto value = argument(text);
    if (!value)
      return std::unexpected(value.error());
    if (value->rank() != 0 || (value->type != ScalarType::I64 && value->type != ScalarType::I32))
      return std::unexpected(fail("'" + trimmed(text) + "' is not an integer"));
    return value->getAsInt(0);
  }

  // [d1, d2, ...]: a shape.
  Result<std::vector<int64_t>> shapeArgument(const std::string &text) {
    std::string list = trimmed(text);
    if (list.size() < 2 || list.front() != '[' || list.back() != ']')
      return std::unexpected(fail("a shape is a list of extents in brackets, such as [3, 4]"));
    std::vector<Token> tokens = tokenize(list);
    std::vector<int64_t> shape;
    for (const std::string &extent : splitArguments(list, tokens, 1, tokens.size() - 2)) {
      auto value = integerArgument(extent);
      if (!value)
        return std::unexpected(value.error());
      if (*value < 0)
        return std::unexpected(fail("an extent of " + std::to_string(*value) + " is negative"));
      shape.push_back(*value);
    }
    return shape;
  }

  // zeros, ones, iota, random, linspace, load; none for another name.
  std::optional<Result<HostArray>> construct(const std::string &name,
                                             const std::vector<std::string> &arguments) {
    static const std::set<std::string> makers = {"zeros",  "ones",     "iota",
                                                 "random", "linspace", "load"};
    if (!makers.contains(name) || kernelNamed(name))
      return std::nullopt;
    auto usage = [&](const char *form) { return std::unexpected(fail(name + " takes " + form)); };
    if (name == "load") {
      if (arguments.size() != 1 || trimmed(arguments[0]).size() < 2 ||
          trimmed(arguments[0]).front() != '"')
        return usage("a file name in quotes: load(\"a.npy\")");
      std::string path = trimmed(arguments[0]);
      auto read = readNpy(path.substr(1, path.size() - 2));
      if (!read)
        return std::unexpected(fail(read.error().message));
      return std::move(*read);
    }
    if (arguments.empty())
      return usage("a type first, such as f32");
    std::optional<ScalarType> type = scalarTypeNamed(trimmed(arguments[0]));
    if (!type)
      return std::unexpected(
          fail("'" + trimmed(arguments[0]) + "' is not a type (i32, i64, f32, f64 or bool)"));
    if (name == "linspace") {
      if (arguments.size() != 4)
        return usage("a type, the first and last values and a count: linspace(f64, 0.0, 1.0, 11)");
      auto low = argument(arguments[1]), high = argument(arguments[2]);
      auto count = integerArgument(arguments[3]);
      if (!low || !high || !count)
        return std::unexpected(!low ? low.error() : !high ? high.error() : count.error());
      if (*count < 0)
        return std::unexpected(fail("a count of " + std::to_string(*count) + " is negative"));
      HostArray values(*type, {*count});
      for (int64_t i = 0; i < *count; ++i)
        values.setFromDouble(static_cast<size_t>(i),
                             *count == 1 ? low->getAsDouble(0)
                                         : low->getAsDouble(0) +
                                               (high->getAsDouble(0) - low->getAsDouble(0)) *
                                                   static_cast<double>(i) /
                                                   static_cast<double>(*count - 1));
      return values;
    }
    if (arguments.size() < 2 || (name != "random" && arguments.size() != 2))
      return usage("a type and a shape: zeros(f32, [3, 4])");
    auto shape = shapeArgument(arguments[1]);
    if (!shape)
      return std::unexpected(shape.error());
    HostArray values(*type, *shape);
    size_t count = values.elementCount();
    if (name == "ones" || name == "iota")
      for (size_t i = 0; i < count; ++i)
        values.setFromDouble(i, name == "ones" ? 1.0 : static_cast<double>(i));
    if (name == "random") {
      uint64_t seed = 0;
      for (size_t i = 2; i < arguments.size(); ++i) {
        std::string option = trimmed(arguments[i]);
        if (!option.starts_with("seed") || option.find('=') == std::string::npos)
          return usage("a type, a shape and a seed: random(f32, [3, 4], seed=1)");
        auto value = integerArgument(option.substr(option.find('=') + 1));
        if (!value)
          return std::unexpected(value.error());
        seed = static_cast<uint64_t>(*value);
      }
      fillRandomValues(values, seed);
    }
    return values;
  }

  // save(VALUE, "file.npy"): nothing to print.
  Result<std::vector<std::pair<std::string, HostArray>>>
  save(const std::vector<std::string> &arguments) {
    std::string path = arguments.size() == 2 ? trimmed(arguments[1]) : "";
    if (path.size() < 2 || path.front() != '"' || path.back() != '"')
      return std::unexpected(fail("save takes a value and a file name in quotes: save(A, "
                                  "\"a.npy\")"));
    auto value = argument(arguments[0]);
    if (value)
      value = onHost(*value);
    if (!value)
      return std::unexpected(value.error());
    if (Status written = writeNpy(path.substr(1, path.size() - 2), *value); !written)
      return std::unexpected(fail(written.error().message));
    std::vector<std::pair<std::string, HostArray>> nothing;
    nothing.emplace_back("", HostArray{});
    return nothing;
  }

  // The session's program (checked once), or null when it has no kernels.
  const Program *sessionProgram() {
    if (!session_) {
      auto checked = checkWith(program_, "", 1, 1);
      session_ = checked ? std::move(*checked) : nullptr;
    }
    return session_ ? session_->program.get() : nullptr;
  }

  const KernelDecl *kernelNamed(const std::string &name) {
    const Program *program = sessionProgram();
    if (!program)
      return nullptr;
    for (const auto &module : program->modules)
      for (const auto &kernel : module->kernels)
        if (kernel->name == name)
          return kernel.get();
    return nullptr;
  }

  Result<std::unique_ptr<Engine>> engine() {
    auto made = device_.empty() ? createDefaultEngine() : createEngine(device_);
    if (!made)
      return std::unexpected(fail(made.error().message));
    return std::move(*made);
  }

  // Runs `kernel` of `program` on arguments bound from `request`. On the
  // GPU, arrays in GPU memory are used where they are and the outputs made
  // there; elsewhere (or to be converted) they are copied to the host first.
  Result<KernelArgs> run(const Program &program, const KernelDecl &kernel,
                         ArgumentRequest request) {
    auto runner = engine();
    if (!runner)
      return std::unexpected(runner.error());
    bool onGpu = (*runner)->kind() == "gpu" && gpu_;
    for (auto &[name, array] : request.arrays) {
      const VarDeclPtr *param = nullptr;
      for (const VarDeclPtr &candidate : kernel.params)
        if (candidate->name == name)
          param = &candidate;
      if (array.inDeviceMemory() && (!onGpu || !param || (*param)->type.element != array.type)) {
        auto host = onHost(array);
        if (!host)
          return std::unexpected(host.error());
        array = std::move(*host);
      }
    }
    if (onGpu)
      if (auto shapes = inferArgumentShapes(kernel, request))
        for (size_t i = 0; i < kernel.params.size(); ++i)
          if (kernel.params[i]->intent == Intent::Out && kernel.params[i]->isArray() &&
              std::ranges::find(shapes->shapes[i], 0) == shapes->shapes[i].end()) {
            auto output = gpu_->allocate(kernel.params[i]->type.element, shapes->shapes[i]);
            if (!output)
              return std::unexpected(fail(output.error().message));
            request.outputs[kernel.params[i]->name] = std::move(*output);
          }
    auto args = bindKernelArguments(kernel, request);
    if (!args)
      return std::unexpected(fail(args.error().message));
    if (auto ran = (*runner)->run(program, kernel, *args); !ran)
      return std::unexpected(fail(ran.error().message));
    return std::move(*args);
  }

  // A call of a kernel: its `in` and `inout` parameters and scalars from the
  // arguments in order, its outputs the result; `inout` arguments naming a
  // value update it.
  Result<std::vector<std::pair<std::string, HostArray>>>
  callKernel(const KernelDecl &kernel, const std::vector<std::string> &arguments) {
    std::vector<const VarDecl *> given;
    for (const VarDeclPtr &param : kernel.params)
      if (param->intent != Intent::Out)
        given.push_back(param.get());
    if (arguments.size() != given.size()) {
      std::string names;
      for (const VarDecl *param : given)
        names += (names.empty() ? "" : ", ") + param->name;
      return std::unexpected(
          fail("kernel '" + kernel.name + "' takes " + std::to_string(given.size()) + " argument" +
               (given.size() == 1 ? "" : "s") + (names.empty() ? "" : " (" + names + ")") +
               ", not " + std::to_string(arguments.size()) +
               (given.size() < kernel.params.size() ? "; its out parameters are its result" : "")));
    }
    ArgumentRequest request;
    for (size_t i = 0; i < given.size(); ++i) {
      auto value = argument(arguments[i]);
      if (!value)
        return std::unexpected(value.error());
      // A scalar as its text, read in the parameter's type (0.5 for an f32),
      // as --set gives it; an array converted where every value fits.
      if (!given[i]->isArray() && value->rank() == 0 && value->type != ScalarType::Bool) {
        request.values[given[i]->name] = formatElement(*value, 0);
        continue;
      }
      request.arrays[given[i]->name] = std::move(*value);
      request.convertible.insert(given[i]->name);
    }
    auto args = run(*sessionProgram(), kernel, request);
    if (!args)
      return std::unexpected(args.error());
    std::vector<std::pair<std::string, HostArray>> outputs;
    for (size_t i = 0, g = 0; i < kernel.params.size(); ++i) {
      const VarDecl &param = *kernel.params[i];
      if (param.intent == Intent::Out)
        outputs.emplace_back(param.name, std::move(args->params[i]));
      else if (param.intent == Intent::InOut)
        if (auto named = values_.find(trimmed(arguments[g])); named != values_.end())
          named->second = args->params[i];
      g += param.intent != Intent::Out;
    }
    if (outputs.empty())
      outputs.emplace_back("", HostArray{}); // nothing to print: a call for its in-out arrays
    return outputs;
  }

  // Whether `text` (NAME[...]) takes a part of `array` for display: slices
  // (`a:b`, `:`) or fewer indices than its rank.
  static bool isPart(const HostArray &array, const std::string &text,
                     const std::vector<Token> &tokens) {
    std::vector<std::string> indices = splitArguments(text, tokens, 2, tokens.size() - 2);
    return array.rank() > 0 && (indices.size() < array.rank() ||
                                std::ranges::any_of(indices, [](const std::string &index) {
                                  return index.find(':') != std::string::npos;
                                }));
  }

  // A part of `array`: NAME[i, a:b, :] (numbers, negative ones counting from
  // the end as in NumPy).
  Result<std::vector<std::pair<std::string, HostArray>>>
  part(const HostArray &array, const std::string &text, const std::vector<Token> &tokens) {
    std::vector<std::string> indices = splitArguments(text, tokens, 2, tokens.size() - 2);
    if (indices.size() > array.rank())
      return std::unexpected(fail(std::to_string(indices.size()) + " indices for an array of " +
                                  std::to_string(array.rank()) + " dimensions"));
    std::vector<int64_t> begins, ends;
    std::vector<bool> kept;
    for (size_t d = 0; d < array.rank(); ++d) {
      int64_t extent = array.shape[d];
      std::string index = d < indices.size() ? trimmed(indices[d]) : ":";
      auto bound = [&](const std::string &part, int64_t missing) -> Result<int64_t> {
        if (trimmed(part).empty())
          return missing;
        auto value = integerArgument(part);
        if (!value)
          return std::unexpected(value.error());
        return *value < 0 ? *value + extent : *value;
      };
      size_t colon = index.find(':');
      if (colon == std::string::npos) {
        auto at = bound(index, 0);
        if (!at)
          return std::unexpected(at.error());
        if (*at < 0 || *at >= extent)
          return std::unexpected(fail("index " + trimmed(index) +
                                      " is out of range for dimension " + std::to_string(d) +
                                      " (extent " + std::to_string(extent) + ")"));
        begins.push_back(*at);
        ends.push_back(*at + 1);
        kept.push_back(false);
        continue;
      }
      auto low = bound(index.substr(0, colon), 0);
      auto high = bound(index.substr(colon + 1), extent);
      if (!low || !high)
        return std::unexpected(!low ? low.error() : high.error());
      begins.push_back(std::clamp<int64_t>(*low, 0, extent));
      ends.push_back(std::clamp<int64_t>(*high, begins.back(), extent));
      kept.push_back(true);
    }
    std::vector<int64_t> shape;
    for (size_t d = 0; d < array.rank(); ++d)
      if (kept[d])
        shape.push_back(ends[d] - begins[d]);
    HostArray result(array.type, shape);
    size_t elementBytes = scalarSize(array.type);
    std::vector<int64_t> at = begins;
    for (size_t n = 0; n < result.elementCount(); ++n) {
      size_t flat = 0;
      for (size_t d = 0; d < array.rank(); ++d)
        flat = flat * static_cast<size_t>(array.shape[d]) + static_cast<size_t>(at[d]);
      std::memcpy(result.bytes.data() + n * elementBytes,
                  array.elementBytes().data() + flat * elementBytes, elementBytes);
      for (size_t d = array.rank(); d-- > 0;) {
        if (++at[d] < ends[d])
          break;
        at[d] = begins[d];
      }
    }
    return single(std::move(result));
  }

  // An expression of the language over the session's values, checked and
  // run as a kernel of its own: its type is the language's.
  Result<std::vector<std::pair<std::string, HostArray>>> expression(const std::string &text) {
    std::vector<Token> tokens = tokenize(text);
    std::vector<std::string> used;
    for (size_t i = 0; i + 1 < tokens.size(); ++i)
      if (tokens[i].kind == Token::Kind::Name && !isPunct(tokens[i + 1], "(") &&
          values_.contains(tokens[i].text) && std::ranges::find(used, tokens[i].text) == used.end())
        used.push_back(tokens[i].text);
    // The values used, as parameters: `A: in f32[A_extent0][A_extent1], n: i64`.
    std::string params;
    for (const std::string &name : used) {
      const HostArray &value = values_.at(name);
      std::string type = scalarTypeName(value.type);
      for (size_t d = 0; d < value.rank(); ++d)
        type += "[" + name + "_extent" + std::to_string(d) + "]";
      params += (params.empty() ? "" : ", ") + name + ": " + (value.rank() ? "in " : "") + type;
    }
    // Its type first, as a `let` infers it; then its value, as an output.
    const std::string head = "  let __value = ";
    auto typed =
        checkWith(program_, "\nkernel __repl_type(" + params + ") {\n" + head + text + ";\n}\n", 3,
                  head.size() + 1);
    if (!typed) {
      Failure failure = typed.error();
      if (failure.offset)
        failure.offset = *failure.offset + offset_;
      return std::unexpected(failure);
    }
    ScalarType type = ScalarType::I64;
    for (const auto &module : (*typed)->program->modules)
      for (const auto &kernel : module->kernels)
        if (kernel->name == "__repl_type")
          if (auto *decl = kernel->body->stmts.front()->as<DeclStmt>())
            type = decl->init->type;
    auto checked = checkWith(program_,
                             "\nkernel __repl_value(" + params + (params.empty() ? "" : ", ") +
                                 "__value: out " + scalarTypeName(type) +
                                 ") {\n  __value = " + text + ";\n}\n",
                             3, std::string("  __value = ").size() + 1);
    if (!checked)
      return std::unexpected(checked.error());
    const KernelDecl *kernel = nullptr;
    for (const auto &module : (*checked)->program->modules)
      for (const auto &declared : module->kernels)
        if (declared->name == "__repl_value")
          kernel = declared.get();
    ArgumentRequest request;
    for (const std::string &name : used)
      request.arrays[name] = values_.at(name);
    auto args = run(*(*checked)->program, *kernel, request);
    if (!args)
      return std::unexpected(args.error());
    return single(std::move(args->params.back()));
  }

  // `value` on the host: copied from the GPU when it is there.
  Result<HostArray> onHost(const HostArray &value) const {
    if (!value.inDeviceMemory())
      return value;
    auto host = gpu_ ? gpu_->download(value) : makeError("no GPU for a value kept there");
    if (!host)
      return std::unexpected(fail(host.error().message));
    return std::move(*host);
  }

  std::map<std::string, HostArray> &values_;
  const ReplProgram &program_;
  const std::string &device_;
  ReplDeviceValues *gpu_;
  size_t offset_ = 0;
  std::unique_ptr<CheckedProgram> session_;
};

} // namespace

bool ReplValues::evaluates(const std::string &input) {
  // A comment goes with the definition it comes before.
  if (input.starts_with("//") || input.starts_with("/*"))
    return false;
  std::vector<Token> tokens = tokenize(input);
  const Token &first = tokens.front();
  if (first.kind == Token::Kind::Punct)
    return first.text != "@" && first.text != ":";
  if (first.kind != Token::Kind::Name)
    return first.kind != Token::Kind::End;
  static const std::set<std::string> definitions = {"kernel", "fn", "assoc", "import", "unsafe"};
  return !definitions.contains(first.text);
}

namespace {

// `text` with its comments (outside strings) made spaces, so that columns
// stay.
std::string withoutComments(std::string text) {
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"')
      inString = !inString;
    if (inString || text[i] != '/' || i + 1 >= text.size())
      continue;
    if (text[i + 1] == '/') {
      for (; i < text.size() && text[i] != '\n'; ++i)
        text[i] = ' ';
    } else if (text[i + 1] == '*') {
      size_t end = text.find("*/", i + 2);
      end = end == std::string::npos ? text.size() : end + 2;
      for (; i < end; ++i)
        if (text[i] != '\n')
          text[i] = ' ';
      --i;
    }
  }
  return text;
}

} // namespace

bool ReplValues::evaluate(const std::string &typed, const ReplProgram &program,
                          const std::string &device) {
  // A `;` at the end, as a statement of the language would have, is let be.
  std::string input = withoutComments(typed);
  while (!input.empty() &&
         (std::isspace(static_cast<unsigned char>(input.back())) || input.back() == ';'))
    input.pop_back();
  std::vector<Token> tokens = tokenize(input);
  std::vector<std::string> names; // what `let` binds
  size_t rhs = 0;
  if (tokens[0].kind == Token::Kind::Name && tokens[0].text == "let") {
    size_t at = 1;
    if (isPunct(tokens[at], "(")) {
      for (++at; tokens[at].kind == Token::Kind::Name; ++at) {
        names.push_back(tokens[at].text);
        if (!isPunct(tokens[++at], ","))
          break;
      }
      at += isPunct(tokens[at], ")") ? 1 : tokens.size();
    } else if (tokens[at].kind == Token::Kind::Name) {
      names.push_back(tokens[at++].text);
    }
    if (names.empty() || at >= tokens.size() || !isPunct(tokens[at], "=")) {
      err_ << "<input>:1:" << tokens[std::min(at, tokens.size() - 1)].offset + 1
           << ": error: expected `let NAME = ...` or `let (NAME, NAME) = ...`\n";
      return false;
    }
    rhs = tokens[at].offset + 1;
  }
  std::string text = input.substr(rhs);
  size_t skipped = text.find_first_not_of(" \t");
  ReplDeviceValues *gpu = gpuFor(device);
  Evaluator evaluator(values_, program, device, gpu ? gpu : gpu_.get());
  auto result = evaluator.evaluate(trimmed(text),
                                   rhs + (skipped == std::string::npos ? text.size() : skipped));
  if (!result) {
    const Failure &failure = result.error();
    err_ << "<input>";
    if (failure.offset)
      err_ << ":1:" << *failure.offset + 1;
    err_ << ": error: " << failure.message << "\n";
    if (failure.offset)
      err_ << "  " << input << "\n  " << std::string(*failure.offset, ' ') << "^\n";
    return false;
  }
  if (names.empty()) {
    for (const auto &[name, value] : *result) {
      if (value.bytes.empty() && value.shape.empty() && !value.inDeviceMemory())
        continue; // a call with no out parameters
      auto shown = onHost(value);
      if (!shown) {
        err_ << "loopc: error: " << shown.error().message << "\n";
        return false;
      }
      out_ << (name.empty() ? "" : name + " = ") << formatValue(*shown) << "\n";
    }
    return true;
  }
  if (names.size() != result->size()) {
    err_ << "<input>: error: "
         << (result->size() == 1 ? "one value" : std::to_string(result->size()) + " values")
         << " to bind to " << names.size() << " name" << (names.size() == 1 ? "" : "s");
    if (result->size() > 1) {
      std::string outputs;
      for (const auto &[name, value] : *result)
        outputs += (outputs.empty() ? "" : ", ") + name;
      err_ << ": bind them with let (" << outputs << ") = ...";
    }
    err_ << "\n";
    return false;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    HostArray value = std::move((*result)[i].second);
    // With the GPU as the session's device, arrays are kept there; a value
    // another name holds is copied, so the two stay apart as on the host.
    bool shared =
        value.inDeviceMemory() && std::ranges::any_of(values_, [&](const auto &named) {
          return named.first != names[i] && named.second.deviceAddress == value.deviceAddress;
        });
    bool upload =
        gpu && value.rank() > 0 && value.elementCount() > 0 && (!value.inDeviceMemory() || shared);
    if (upload) {
      auto host = onHost(value);
      auto placed = host ? gpu->upload(*host) : std::unexpected(host.error());
      if (!placed) {
        err_ << "loopc: error: " << placed.error().message << "\n";
        return false;
      }
      value = std::move(*placed);
    }
    values_[names[i]] = std::move(value);
    out_ << names[i] << ": " << typeText(values_[names[i]]) << "\n";
  }
  if (gpu_)
    gpu_->keepOnly(values_);
  return true;
}

ReplValues::ReplValues(std::ostream &out, std::ostream &err) : out_(out), err_(err) {}
ReplValues::~ReplValues() = default;

void ReplValues::clear() {
  values_.clear();
  gpu_.reset();
}

ReplDeviceValues *ReplValues::gpuFor(const std::string &device) {
  bool wanted = device == "gpu" || (device.empty() && !noGpu_);
  if (!wanted)
    return nullptr;
  if (!gpu_) {
    auto opened = ReplDeviceValues::open();
    if (!opened) {
      noGpu_ = device.empty();
      return nullptr; // the engine says why, for --device gpu
    }
    gpu_ = std::move(*opened);
  }
  return gpu_.get();
}

Expected<HostArray> ReplValues::onHost(const HostArray &value) const {
  if (!value.inDeviceMemory())
    return value;
  if (!gpu_)
    return makeError("no GPU for a value kept there");
  return gpu_->download(value);
}

void ReplValues::list() const {
  if (values_.empty()) {
    out_ << "no values yet: `let x = ...` makes one\n";
    return;
  }
  for (const auto &[name, value] : values_)
    out_ << name << ": " << typeText(value) << (value.inDeviceMemory() ? " (gpu)\n" : " (host)\n");
}

bool ReplValues::print(const std::string &name, bool full) const {
  auto found = values_.find(name);
  if (found == values_.end()) {
    err_ << "loopc: error: no value named '" << name << "' (:who lists them)\n";
    return false;
  }
  auto shown = onHost(found->second);
  if (!shown) {
    err_ << "loopc: error: " << shown.error().message << "\n";
    return false;
  }
  out_ << formatValue(*shown, full) << "\n";
  return true;
}

std::vector<std::string> ReplValues::names() const {
  std::vector<std::string> names;
  for (const auto &[name, value] : values_)
    names.push_back(name);
  return names;
}

} // namespace loopc::driver
