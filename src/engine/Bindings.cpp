// Binding a kernel's arguments (see Bindings.h). The order matters: scalar
// values first (extents may use integer parameters), then sizes from --set
// and from the arrays given, then every extent is evaluated and checked, the
// total memory is checked, and only then is anything allocated.
#include "engine/Bindings.h"
#include "support/IntegerArithmetic.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <limits>
#include <optional>
#include <sstream>
#include <thread>

namespace loopc {

namespace {

std::string typeText(ScalarType element, const std::vector<int64_t> &shape) {
  std::string text = scalarTypeName(element);
  for (int64_t extent : shape)
    text += "[" + std::to_string(extent) + "]";
  return text;
}

std::string shapeList(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i ? ", " : "") + names[i];
  return text;
}

// ------------------------------------------------ parsing --set values ---

std::optional<int64_t> parseInteger(std::string_view text) {
  if (text.starts_with('+'))
    text.remove_prefix(1);
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    return std::nullopt;
  return value;
}

// `text` as a double, or nullopt when it is not a number. A number beyond
// double's range sets `overflowed` (1e400); one too small for it rounds as
// strtod does, to a subnormal or 0 (1e-400).
std::optional<double> parseFloat(std::string_view text, bool &overflowed) {
  if (text.starts_with('+'))
    text.remove_prefix(1);
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size() ||
      (error != std::errc() && error != std::errc::result_out_of_range))
    return std::nullopt;
  if (error == std::errc::result_out_of_range) {
    value = std::strtod(std::string(text).c_str(), nullptr);
    overflowed = std::isinf(value);
  }
  return value;
}

// Parses `text` as a value of `type` into a rank-0 array.
Expected<HostArray> parseScalar(const std::string &name, ScalarType type, const std::string &text) {
  HostArray array(type, {});
  auto junk = [&]() {
    return makeError("invalid value '" + text + "' for " + name + " (a " + scalarTypeName(type) +
                     ")");
  };
  auto outOfRange = [&]() {
    return makeError("value " + text + " for " + name + " is out of range for " +
                     scalarTypeName(type));
  };
  switch (type) {
  case ScalarType::Bool:
    if (text == "true" || text == "1")
      array.data<uint8_t>()[0] = 1;
    else if (text != "false" && text != "0")
      return junk();
    return array;
  case ScalarType::I32:
  case ScalarType::I64: {
    auto value = parseInteger(text);
    if (!value) {
      // Distinguish a number too large (digits only) from junk, 1.0 and 1e3.
      std::string_view digits = text;
      if (digits.starts_with('+') || digits.starts_with('-'))
        digits.remove_prefix(1);
      bool tooLarge = !digits.empty() && std::ranges::all_of(digits, [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
      return tooLarge ? outOfRange() : junk();
    }
    if (type == ScalarType::I32) {
      if (*value < std::numeric_limits<int32_t>::min() ||
          *value > std::numeric_limits<int32_t>::max())
        return outOfRange();
      array.data<int32_t>()[0] = static_cast<int32_t>(*value);
    } else {
      array.data<int64_t>()[0] = *value;
    }
    return array;
  }
  case ScalarType::F32:
  case ScalarType::F64: {
    bool overflowed = false;
    auto value = parseFloat(text, overflowed);
    if (!value)
      return junk();
    // Out of f32's range when it rounds to infinity (3.4028235e38, FLT_MAX
    // as printed, is above FLT_MAX but rounds to it).
    if (overflowed || (type == ScalarType::F32 && std::isfinite(*value) &&
                       std::isinf(static_cast<float>(*value))))
      return outOfRange();
    array.setFromDouble(0, *value);
    return array;
  }
  }
  return junk();
}

// --------------------------------------------------- extent evaluation ---

// Integer values extents may refer to: sizes and integer scalar parameters.
using IntegerScope = std::map<std::string, int64_t>;

Expected<int64_t> evaluateExtent(const Expr &expr, const IntegerScope &scope);

// One operation of an extent, its operands evaluated by evaluateExtent, in
// 64 bits.
Expected<int64_t> evaluateExtentOperation(const Expr &expr, const IntegerScope &scope) {
  auto overflow = [&]() { return makeError("the extent overflows 64-bit integers", expr.range); };
  if (auto *literal = expr.as<IntLitExpr>()) {
    if (literal->value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return overflow();
    return static_cast<int64_t>(literal->value);
  }
  if (auto *name = expr.as<NameExpr>()) {
    auto found = scope.find(name->name);
    if (found == scope.end())
      return makeError("the extent uses '" + name->name +
                           "', which is neither a size nor an integer parameter",
                       expr.range);
    return found->second;
  }
  if (auto *unary = expr.as<UnaryExpr>()) {
    if (unary->op != UnaryOp::Neg)
      return makeError("an extent must be an integer expression", expr.range);
    auto operand = evaluateExtent(*unary->operand, scope);
    if (!operand)
      return operand;
    int64_t result = 0;
    if (__builtin_sub_overflow(int64_t{0}, *operand, &result))
      return overflow();
    return result;
  }
  if (auto *cast = expr.as<CastExpr>()) {
    if (!isInteger(cast->target))
      return makeError("an extent must be an integer expression", expr.range);
    return evaluateExtent(*cast->operand, scope);
  }
  if (auto *call = expr.as<CallExpr>()) {
    std::vector<int64_t> args;
    for (const ExprPtr &arg : call->args) {
      auto value = evaluateExtent(*arg, scope);
      if (!value)
        return value;
      args.push_back(*value);
    }
    if (call->callee == "min" && args.size() == 2)
      return std::min(args[0], args[1]);
    if (call->callee == "max" && args.size() == 2)
      return std::max(args[0], args[1]);
    if (call->callee == "abs" && args.size() == 1) {
      if (args[0] == std::numeric_limits<int64_t>::min())
        return overflow();
      return args[0] < 0 ? -args[0] : args[0];
    }
    return makeError("'" + call->callee + "' cannot be evaluated in an extent", expr.range);
  }
  if (auto *binary = expr.as<BinaryExpr>()) {
    auto lhs = evaluateExtent(*binary->lhs, scope);
    if (!lhs)
      return lhs;
    auto rhs = evaluateExtent(*binary->rhs, scope);
    if (!rhs)
      return rhs;
    std::optional<int64_t> result;
    switch (binary->op) {
    case BinaryOp::Add:
      result = exactAdd(*lhs, *rhs);
      break;
    case BinaryOp::Sub:
      result = exactSubtract(*lhs, *rhs);
      break;
    case BinaryOp::Mul:
      result = exactMultiply(*lhs, *rhs);
      break;
    case BinaryOp::Div:
    case BinaryOp::Rem:
      if (*rhs == 0)
        return makeError("division by zero in an extent", expr.range);
      result = binary->op == BinaryOp::Div ? exactDivide(*lhs, *rhs) : exactRemainder(*lhs, *rhs);
      break;
    default:
      return makeError("an extent must be an integer expression of sizes and parameters",
                       expr.range);
    }
    if (!result)
      return overflow();
    return *result;
  }
  return makeError("an extent must be an integer expression of sizes and parameters", expr.range);
}

// An extent's value, computed in the types the checker gave its parts: a
// part whose value leaves its type (`n * n` with `n: i32` past 2^31, `i32(N)`
// of a larger size) is refused, as compiled code, computing in that type,
// would wrap it to another extent than the arrays are allocated with.
Expected<int64_t> evaluateExtent(const Expr &expr, const IntegerScope &scope) {
  auto value = evaluateExtentOperation(expr, scope);
  if (value && expr.type == ScalarType::I32 &&
      (*value < std::numeric_limits<int32_t>::min() ||
       *value > std::numeric_limits<int32_t>::max()))
    return makeError("the extent overflows 32-bit integers (this part is " +
                         std::to_string(*value) + ")",
                     expr.range);
  return value;
}

// ------------------------------------------------------- memory limits ---

uint64_t availableMemoryBytes() {
  // Without /proc/meminfo (not Linux), a cap that any development machine
  // has keeps a typo like N=1e12 from reaching the allocator.
  constexpr uint64_t kFallback = uint64_t{16} << 30;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kilobytes = 0;
  std::string unit;
  while (meminfo >> key >> kilobytes) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:")
      return kilobytes * 1024;
  }
  return kFallback;
}

// ------------------------------------------------------- random inputs ---

// Mixes the seed with the parameter's position so every parameter gets its
// own stream and adding a parameter does not change the others' data.
uint64_t parameterSeed(uint64_t seed, size_t position) {
  uint64_t value = seed ^ (0x9E3779B97F4A7C15ull * (position + 1));
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

// The bits of element `index` of a parameter's stream: a counter-based
// generator (splitmix64's output function on seed + (index + 1) times the
// golden ratio), so that any part of an array can be filled on its own, in
// any order and on any number of threads, to the same values.
uint64_t streamBits(uint64_t seed, uint64_t index) {
  uint64_t value = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

// Arrays this large are filled by several threads (with one sequential
// generator, filling 2^27 floats took many times as long as a kernel's run
// on them).
constexpr size_t kParallelFillElements = size_t{1} << 20;
// The least each thread fills.
constexpr size_t kElementsPerFillThread = size_t{1} << 18;

// The values are built from raw generator bits rather than std::
// distributions, whose results differ between standard libraries. An
// integer is low + the high 64 bits of bits * (high - low) (uniform up to a
// bias of span / 2^64; for [0, 16), the top four bits).
void fillRandomRange(HostArray &array, uint64_t seed, const ArgumentRequest &request, size_t begin,
                     size_t end) {
  auto span = static_cast<unsigned __int128>(static_cast<uint64_t>(request.randomHigh) -
                                             static_cast<uint64_t>(request.randomLow));
  auto integer = [&](uint64_t bits) {
    return request.randomLow + static_cast<int64_t>((bits * span) >> 64);
  };
  for (size_t i = begin; i < end; ++i) {
    uint64_t bits = streamBits(seed, i);
    switch (array.type) {
    case ScalarType::F32:
      array.data<float>()[i] = static_cast<float>(bits >> 40) * 0x1p-23f - 1.0f;
      break;
    case ScalarType::F64:
      array.data<double>()[i] = static_cast<double>(bits >> 11) * 0x1p-52 - 1.0;
      break;
    case ScalarType::I32:
      array.data<int32_t>()[i] = static_cast<int32_t>(integer(bits));
      break;
    case ScalarType::I64:
      array.data<int64_t>()[i] = integer(bits);
      break;
    case ScalarType::Bool:
      array.data<uint8_t>()[i] = static_cast<uint8_t>(bits >> 63);
      break;
    }
  }
}

void fillRandom(HostArray &array, uint64_t seed, const ArgumentRequest &request) {
  size_t count = array.elementCount();
  size_t threads = 1;
  if (count >= kParallelFillElements)
    threads = std::clamp<size_t>(count / kElementsPerFillThread, 1,
                                 std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 1) {
    fillRandomRange(array, seed, request, 0, count);
    return;
  }
  std::vector<std::thread> fillers;
  size_t share = (count + threads - 1) / threads;
  for (size_t begin = share; begin < count; begin += share)
    fillers.emplace_back([&, begin] {
      fillRandomRange(array, seed, request, begin, std::min(count, begin + share));
    });
  fillRandomRange(array, seed, request, 0, std::min(count, share));
  for (std::thread &filler : fillers)
    filler.join();
}

// "an f32", "an i64[3]", "a bool": the article as the name is read aloud.
std::string withArticle(const std::string &word) {
  bool vowelSound = !word.empty() && (std::string("aeiou").find(word[0]) != std::string::npos ||
                                      (word[0] == 'f' && word.size() > 1 && std::isdigit(word[1])));
  return (vowelSound ? "an " : "a ") + word;
}

// `array` with elements of type `to`, for `--in NAME=FILE:convert`; an
// element that does not fit exactly (a fraction or an out-of-range value into
// an integer, a float beyond f32's range) is an error naming it.
Expected<HostArray> convertElements(const HostArray &array, ScalarType to, const VarDecl &param) {
  if (array.type == ScalarType::Bool || to == ScalarType::Bool)
    return makeError("'" + param.name + "': bools are not converted (" +
                         scalarTypeName(array.type) + " given, " + scalarTypeName(to) + " needed)",
                     param.type.range);
  HostArray converted(to, array.shape);
  auto text = [](auto value) {
    std::ostringstream out;
    out << std::setprecision(17) << value;
    return out.str();
  };
  auto fail = [&](size_t i, const std::string &value) {
    return makeError("'" + param.name + "': element " + std::to_string(i) + " (" + value +
                         ") does not fit " + scalarTypeName(to) + " exactly; not converted",
                     param.type.range);
  };
  bool fromInteger = array.type == ScalarType::I32 || array.type == ScalarType::I64;
  for (size_t i = 0; i < array.elementCount(); ++i) {
    switch (to) {
    case ScalarType::F64:
      converted.data<double>()[i] = array.getAsDouble(i);
      break;
    case ScalarType::F32: {
      double value = array.getAsDouble(i);
      if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max())
        return fail(i, text(value));
      converted.data<float>()[i] = static_cast<float>(value);
      break;
    }
    case ScalarType::I32:
    case ScalarType::I64: {
      int64_t low = to == ScalarType::I32 ? std::numeric_limits<int32_t>::min()
                                          : std::numeric_limits<int64_t>::min();
      int64_t high = to == ScalarType::I32 ? std::numeric_limits<int32_t>::max()
                                           : std::numeric_limits<int64_t>::max();
      int64_t value = 0;
      if (fromInteger) {
        value = array.getAsInt(i);
      } else {
        double real = array.getAsDouble(i);
        // 2^63 is the first double past i64's range.
        if (!(real == std::trunc(real) && real >= -0x1p63 && real < 0x1p63))
          return fail(i, text(real));
        value = static_cast<int64_t>(real);
      }
      if (value < low || value > high)
        return fail(i, text(value));
      if (to == ScalarType::I32)
        converted.data<int32_t>()[i] = static_cast<int32_t>(value);
      else
        converted.data<int64_t>()[i] = value;
      break;
    }
    case ScalarType::Bool:
      break;
    }
  }
  return converted;
}

// Where a size's value came from, for conflict messages.
struct SizeBinding {
  int64_t value;
  std::string origin;
};

std::string dimensionOrigin(const VarDecl &param, size_t dimension) {
  return "'" + param.name + "' (dimension " + std::to_string(dimension) + ")";
}

} // namespace

void fillRandomValues(HostArray &array, uint64_t seed, int64_t low, int64_t high) {
  ArgumentRequest request;
  request.randomLow = low;
  request.randomHigh = high;
  fillRandom(array, seed, request);
}

std::string formatByteCount(uint64_t bytes) {
  static const char *const kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 999.5 && unit + 1 < std::size(kUnits)) {
    value /= 1000;
    ++unit;
  }
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(unit > 0 && value < 9.95 ? 1 : 0);
  out << value << " " << kUnits[unit];
  return out.str();
}

namespace {

// What bindKernelArguments does before it makes the arrays: the names
// checked, the scalars bound, the sizes inferred and each array's shape
// checked against the arrays given.
struct BoundShapes {
  KernelArgs args; // sizes and scalars; arrays still empty
  std::vector<std::vector<int64_t>> shapes;
  uint64_t totalBytes = 0;
  bool overflows = false;
};

Expected<BoundShapes> bindShapes(const KernelDecl &kernel, const ArgumentRequest &request) {
  for (const VarDeclPtr &param : kernel.params)
    if (param->type.element == ScalarType::I32 &&
        (param->isArray() ? param->intent != Intent::Out : param->intent == Intent::InOut) &&
        !request.arrays.contains(param->name) && !request.values.contains(param->name) &&
        (request.randomLow < std::numeric_limits<int32_t>::min() ||
         request.randomHigh - 1 > std::numeric_limits<int32_t>::max()))
      return makeError(
          "random integers in [" + std::to_string(request.randomLow) + ", " +
              std::to_string(request.randomHigh) + ") do not fit '" + param->name +
              "', an i32 input (give a narrower --random-range, or the array with --in)",
          param->range);
  auto findParam = [&](const std::string &name) -> const VarDecl * {
    for (const VarDeclPtr &param : kernel.params)
      if (param->name == name)
        return param.get();
    return nullptr;
  };
  auto isSize = [&](const std::string &name) {
    for (const VarDeclPtr &size : kernel.sizes)
      if (size->name == name)
        return true;
    return false;
  };
  auto knownNames = [&]() {
    std::vector<std::string> names;
    for (const VarDeclPtr &param : kernel.params)
      names.push_back(param->name);
    for (const VarDeclPtr &size : kernel.sizes)
      names.push_back(size->name);
    return names.empty() ? std::string("none") : joinNames(names);
  };

  // Every name given must be a parameter or a size, given in the right form.
  for (const auto &[name, text] : request.values) {
    const VarDecl *param = findParam(name);
    if (!param && !isSize(name))
      return makeError("kernel '" + kernel.name + "' has no parameter or size named '" + name +
                       "' (it has " + knownNames() + ")");
    if (param && param->isArray())
      return makeError("'" + name + "' is an array: pass it as a .npy file (--in " + name +
                       "=FILE.npy)");
    if (param && (param->intent == Intent::Out))
      return makeError("'" + name + "' is an output of kernel '" + kernel.name +
                       "': it cannot be set");
  }
  for (const auto &[name, array] : request.outputs) {
    const VarDecl *param = findParam(name);
    if (!param || param->intent != Intent::Out)
      return makeError("'" + name + "' is not an out parameter of kernel '" + kernel.name +
                       "': only out parameters take arrays to write into");
    if (array.type != param->type.element || array.rank() != param->type.rank())
      return makeError("'" + name + "' needs " + withArticle(scalarTypeName(param->type.element)) +
                           " array of rank " + std::to_string(param->type.rank()) +
                           " to write into, but " + withArticle(typeText(array.type, array.shape)) +
                           " array was given",
                       param->type.range);
  }
  // The array given for an array parameter: an input, or memory to write an
  // output into.
  auto givenArray = [&](const VarDecl &param) -> const HostArray * {
    const auto &given = param.intent == Intent::Out ? request.outputs : request.arrays;
    auto found = given.find(param.name);
    return found == given.end() ? nullptr : &found->second;
  };
  for (const auto &[name, array] : request.arrays) {
    const VarDecl *param = findParam(name);
    if (!param && isSize(name))
      return makeError("'" + name + "' is a size of kernel '" + kernel.name +
                       "', not an array: give its value with --set " + name + "=...");
    if (!param)
      return makeError("kernel '" + kernel.name + "' has no parameter named '" + name +
                       "' (it has " + knownNames() + ")");
    if (param->intent == Intent::Out)
      return makeError("'" + name + "' is an out parameter of kernel '" + kernel.name +
                       "' and starts zeroed: only in and inout parameters take input data");
    if (request.values.contains(name))
      return makeError("'" + name + "' is given twice (as a value and as an array)");
  }

  KernelArgs args;
  args.params.resize(kernel.params.size());
  IntegerScope scope;

  // Scalar parameters: parsed values, rank-0 arrays, zeroed outputs, random
  // inout values; value parameters have no default.
  std::vector<std::string> missingValues;
  for (size_t position = 0; position < kernel.params.size(); ++position) {
    const VarDecl &param = *kernel.params[position];
    if (param.isArray())
      continue;
    ScalarType type = param.type.element;
    HostArray &value = args.params[position];
    if (auto text = request.values.find(param.name); text != request.values.end()) {
      auto parsed = parseScalar("'" + param.name + "'", type, text->second);
      if (!parsed)
        return std::unexpected(parsed.error());
      value = std::move(*parsed);
    } else if (auto given = request.arrays.find(param.name); given != request.arrays.end()) {
      if (given->second.type != type || given->second.rank() != 0)
        return makeError("'" + param.name + "' is a scalar " + scalarTypeName(type) + " but " +
                             withArticle(typeText(given->second.type, given->second.shape)) +
                             " array was given",
                         param.range);
      value = given->second;
    } else if (param.intent == Intent::Out) {
      value = HostArray(type, {});
      if (const HostArray *given = givenArray(param))
        value = *given; // zeroed by bindKernelArguments, with the arrays given
    } else if (param.intent == Intent::InOut) {
      value = HostArray(type, {});
      fillRandom(value, parameterSeed(request.seed, position), request);
    } else {
      missingValues.push_back(param.name);
      continue;
    }
    if (isInteger(type))
      scope[param.name] = value.getAsInt(0);
  }
  if (!missingValues.empty()) {
    std::string hint;
    for (const std::string &name : missingValues)
      hint += " " + request.valueOption + name + "=...";
    return makeError("kernel '" + kernel.name + "' needs a value for " + joinNames(missingValues) +
                     ": give it with" + hint);
  }

  // Sizes: from --set first, then from the arrays given.
  std::map<std::string, SizeBinding> sizes;
  for (const VarDeclPtr &size : kernel.sizes) {
    auto text = request.values.find(size->name);
    if (text == request.values.end())
      continue;
    auto value = parseInteger(text->second);
    if (!value || *value < 0)
      return makeError("invalid value '" + text->second + "' for size " + size->name +
                       " (a non-negative integer)");
    sizes[size->name] = {*value, "--set " + size->name + "=" + text->second};
  }
  for (size_t position = 0; position < kernel.params.size(); ++position) {
    const VarDecl &param = *kernel.params[position];
    const HostArray *given = givenArray(param);
    if (!param.isArray() || !given)
      continue;
    const HostArray &array = *given;
    if (array.rank() != param.type.rank() ||
        (array.type != param.type.element && !request.convertible.contains(param.name))) {
      std::string hint;
      if (array.rank() == param.type.rank())
        hint = " (convert it: x.astype(numpy." +
               std::string(param.type.element == ScalarType::F32   ? "float32"
                           : param.type.element == ScalarType::F64 ? "float64"
                           : param.type.element == ScalarType::I32 ? "int32"
                           : param.type.element == ScalarType::I64 ? "int64"
                                                                   : "bool_") +
               ") in Python, or let loopc: --in " + param.name + "=FILE:convert)";
      return makeError(
          "'" + param.name + "' needs " + withArticle(scalarTypeName(param.type.element)) +
              " array of rank " + std::to_string(param.type.rank()) + ", but " +
              withArticle(typeText(array.type, array.shape)) + " array was given" + hint,
          param.type.range);
    }
    for (size_t d = 0; d < param.type.rank(); ++d) {
      auto *name = param.type.dims[d]->as<NameExpr>();
      if (!name || !isSize(name->name))
        continue;
      auto [bound, inserted] =
          sizes.try_emplace(name->name, SizeBinding{array.shape[d], dimensionOrigin(param, d)});
      if (!inserted && bound->second.value != array.shape[d])
        return makeError("size " + name->name + " is " + std::to_string(bound->second.value) +
                             " from " + bound->second.origin + " but " +
                             std::to_string(array.shape[d]) + " from " + dimensionOrigin(param, d),
                         param.type.dims[d]->range);
    }
  }
  std::vector<std::string> missingSizes;
  for (const VarDeclPtr &size : kernel.sizes) {
    auto bound = sizes.find(size->name);
    if (bound == sizes.end()) {
      missingSizes.push_back(size->name);
      continue;
    }
    args.sizes[size->name] = bound->second.value;
    scope[size->name] = bound->second.value;
  }
  if (!missingSizes.empty()) {
    std::string hint;
    for (const std::string &name : missingSizes)
      hint += " " + request.valueOption + name + "=...";
    return makeError("cannot infer size" + std::string(missingSizes.size() > 1 ? "s " : " ") +
                     joinNames(missingSizes) + " of kernel '" + kernel.name +
                     "' from the arrays given: set " + (missingSizes.size() > 1 ? "them" : "it") +
                     " with" + hint);
  }

  // Every array's shape, checked against the arrays given and summed up.
  std::vector<std::vector<int64_t>> shapes(kernel.params.size());
  uint64_t totalBytes = 0;
  bool overflows = false;
  for (size_t position = 0; position < kernel.params.size(); ++position) {
    const VarDecl &param = *kernel.params[position];
    if (!param.isArray())
      continue;
    uint64_t bytes = scalarSize(param.type.element);
    for (const ExprPtr &dim : param.type.dims) {
      auto extent = evaluateExtent(*dim, scope);
      if (!extent)
        return makeError("in the type of '" + param.name + "': " + extent.error().message,
                         extent.error().range);
      if (*extent < 0)
        return makeError("'" + param.name + "' would have a negative extent (" +
                             std::to_string(*extent) + ")",
                         dim->range);
      shapes[position].push_back(*extent);
      overflows |= __builtin_mul_overflow(bytes, static_cast<uint64_t>(*extent), &bytes);
    }
    overflows |= __builtin_add_overflow(totalBytes, bytes, &totalBytes);
    const HostArray *given = givenArray(param);
    if (given && given->shape != shapes[position])
      return makeError("'" + param.name + "' has shape " + shapeList(given->shape) +
                           " but its type " + typeText(param.type.element, shapes[position]) +
                           " needs " + shapeList(shapes[position]),
                       param.range);
  }
  return BoundShapes{std::move(args), std::move(shapes), totalBytes, overflows};
}

} // namespace

Expected<ArgumentShapes> inferArgumentShapes(const KernelDecl &kernel,
                                             const ArgumentRequest &request) {
  auto bound = bindShapes(kernel, request);
  if (!bound)
    return std::unexpected(bound.error());
  return ArgumentShapes{std::move(bound->args.sizes), std::move(bound->shapes)};
}

Expected<KernelArgs> bindKernelArguments(const KernelDecl &kernel, const ArgumentRequest &request) {
  auto bound = bindShapes(kernel, request);
  if (!bound)
    return std::unexpected(bound.error());
  auto &[args, shapes, totalBytes, overflows] = *bound;
  uint64_t limit = request.memoryLimitBytes ? request.memoryLimitBytes : availableMemoryBytes();
  if (overflows)
    return makeError("the arrays of kernel '" + kernel.name +
                     "' need more bytes than a 64-bit machine can address");
  if (totalBytes > limit)
    return makeError("arrays need " + formatByteCount(totalBytes) + " but the machine has " +
                     formatByteCount(limit) + " available");

  for (size_t position = 0; position < kernel.params.size(); ++position) {
    const VarDecl &param = *kernel.params[position];
    // Memory given to write an output into starts zeroed, as every output does.
    if (auto output = request.outputs.find(param.name); output != request.outputs.end()) {
      args.params[position] = output->second;
      std::ranges::fill(args.params[position].elementBytes(), 0);
      continue;
    }
    if (!param.isArray())
      continue;
    auto given = request.arrays.find(param.name);
    if (given != request.arrays.end()) {
      if (given->second.type == param.type.element) {
        args.params[position] = given->second;
        continue;
      }
      auto converted = convertElements(given->second, param.type.element, param);
      if (!converted)
        return std::unexpected(converted.error());
      args.params[position] = std::move(*converted);
      continue;
    }
    args.params[position] = HostArray(param.type.element, shapes[position]);
    if (param.intent != Intent::Out)
      fillRandom(args.params[position], parameterSeed(request.seed, position), request);
  }
  return args;
}

Status refuseDeviceArrays(const KernelDecl &kernel, const KernelArgs &args,
                          const std::string &engine) {
  for (size_t i = 0; i < kernel.params.size() && i < args.params.size(); ++i)
    if (args.params[i].inDeviceMemory())
      return makeError("'" + kernel.params[i]->name + "' is in GPU memory, which the " + engine +
                           " engine cannot read: run on the GPU, or pass an array in host memory",
                       kernel.params[i]->range);
  return {};
}

std::map<std::string, int64_t> integerValues(const KernelDecl &kernel, const KernelArgs &args) {
  std::map<std::string, int64_t> values = args.sizes;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const HostArray &value = args.params[i];
    if (value.rank() == 0 && isInteger(value.type))
      values[kernel.params[i]->name] = value.getAsInt(0);
  }
  return values;
}

} // namespace loopc
