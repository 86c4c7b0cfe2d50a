// The .npy format (numpy.lib.format): a magic string, a version, a header
// length, then a Python dict literal `{'descr': '<f4', 'fortran_order':
// False, 'shape': (3, 4), }` padded so the data starts aligned, then the raw
// elements. The header is parsed with a small literal parser rather than by
// pattern matching, so key order and spacing do not matter.
#include "engine/Npy.h"

#include "support/AtomicFile.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

namespace loopc {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// The value of one header key: a string, a boolean, or a tuple of integers.
struct HeaderValue {
  enum class Kind { String, Bool, Tuple } kind = Kind::String;
  std::string text;
  bool flag = false;
  std::vector<int64_t> tuple;
};

// Parses the header dict. Returns an error message (without the file name) on
// anything that is not a dict of string keys to the values above.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Expected<std::vector<std::pair<std::string, HeaderValue>>> parseDict() {
    std::vector<std::pair<std::string, HeaderValue>> entries;
    skipSpace();
    if (!consume('{'))
      return fail("the header is not a dict");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      auto key = parseString();
      if (!key)
        return fail("expected a quoted key");
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + *key + "'");
      auto value = parseValue();
      if (!value)
        return std::unexpected(value.error());
      entries.emplace_back(std::move(*key), std::move(*value));
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (!consume('}'))
        return fail("expected ',' or '}'");
      break;
    }
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the dict");
    return entries;
  }

private:
  std::unexpected<Error> fail(const std::string &what) const {
    return makeError("unparsable header (" + what + " at offset " + std::to_string(pos_) + ")");
  }

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  std::optional<std::string> parseString() {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return std::nullopt;
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      return std::nullopt;
    std::string result(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return result;
  }

  Expected<HeaderValue> parseValue() {
    skipSpace();
    HeaderValue value;
    if (auto text = parseString()) {
      value.text = std::move(*text);
      return value;
    }
    if (consumeWord("True") || consumeWord("False")) {
      value.kind = HeaderValue::Kind::Bool;
      value.flag = text_[pos_ - 1] == 'e' && text_[pos_ - 2] == 'u'; // "True", not "False"
      return value;
    }
    if (!consume('('))
      return fail("expected a string, True, False or a tuple");
    value.kind = HeaderValue::Kind::Tuple;
    while (true) {
      skipSpace();
      if (consume(')'))
        return value;
      auto number = parseExtent();
      if (!number)
        return std::unexpected(number.error());
      value.tuple.push_back(*number);
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (!consume(')'))
        return fail("expected ',' or ')' in the shape");
      return value;
    }
  }

  // A non-negative integer; numpy may write a Python long as `3L`.
  Expected<int64_t> parseExtent() {
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
      return fail("expected a non-negative integer in the shape");
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (__builtin_mul_overflow(value, int64_t{10}, &value) ||
          __builtin_add_overflow(value, int64_t{text_[pos_] - '0'}, &value))
        return makeError("the shape has an extent too large for 64 bits");
      ++pos_;
    }
    consume('L');
    return value;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// Maps a descr such as '<f4' to a loopc type.
Expected<ScalarType> typeFromDescr(const std::string &descr) {
  auto unsupported = [&] {
    return makeError("unsupported dtype '" + descr +
                     "' (loopc reads f4, f8, i4, i8 and b1 arrays: float32, float64, int32, int64 "
                     "and bool)");
  };
  if (descr.size() < 3)
    return unsupported();
  char order = descr[0];
  std::string kind = descr.substr(1);
  if (order == '>')
    return makeError("big-endian data ('" + descr + "') is not supported; save it as '<" + kind +
                     "'");
  static const std::pair<const char *, ScalarType> kTypes[] = {
      {"f4", ScalarType::F32}, {"f8", ScalarType::F64},  {"i4", ScalarType::I32},
      {"i8", ScalarType::I64}, {"b1", ScalarType::Bool},
  };
  for (const auto &[name, type] : kTypes) {
    if (kind != name)
      continue;
    // '|' (byte order not applicable) only makes sense for one-byte types.
    bool orderOk = order == '<' || order == '=' || (order == '|' && scalarSize(type) == 1);
    if (!orderOk)
      return makeError("invalid byte order in dtype '" + descr + "'");
    return type;
  }
  return unsupported();
}

const char *descrOf(ScalarType type) {
  switch (type) {
  case ScalarType::F32:
    return "<f4";
  case ScalarType::F64:
    return "<f8";
  case ScalarType::I32:
    return "<i4";
  case ScalarType::I64:
    return "<i8";
  case ScalarType::Bool:
    return "|b1";
  }
  return "<f4";
}

uint32_t readLittleEndian(std::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= uint32_t(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return value;
}

Expected<HostArray> decodeWithoutName(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 2 || bytes.substr(0, kMagic.size()) != kMagic)
    return makeError("not a .npy file (bad magic string)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  unsigned minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    return makeError("unsupported .npy version " + std::to_string(major) + "." +
                     std::to_string(minor));
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerStart = 8 + lengthWidth;
  if (bytes.size() < headerStart)
    return makeError("truncated header");
  size_t headerLength = readLittleEndian(bytes, 8, lengthWidth);
  if (bytes.size() - headerStart < headerLength)
    return makeError("truncated header (" + std::to_string(headerLength) + " bytes announced, " +
                     std::to_string(bytes.size() - headerStart) + " present)");

  auto entries = HeaderParser(bytes.substr(headerStart, headerLength)).parseDict();
  if (!entries)
    return std::unexpected(entries.error());
  const HeaderValue *descr = nullptr, *fortranOrder = nullptr, *shape = nullptr;
  for (const auto &[key, value] : *entries) {
    if (key == "descr")
      descr = &value;
    else if (key == "fortran_order")
      fortranOrder = &value;
    else if (key == "shape")
      shape = &value;
  }
  if (!descr || descr->kind != HeaderValue::Kind::String)
    return makeError(descr ? "unsupported dtype (structured or object dtypes cannot be read)"
                           : "the header has no 'descr'");
  if (!fortranOrder || fortranOrder->kind != HeaderValue::Kind::Bool)
    return makeError("the header has no boolean 'fortran_order'");
  if (!shape || shape->kind != HeaderValue::Kind::Tuple)
    return makeError("the header has no 'shape' tuple");
  if (fortranOrder->flag)
    return makeError("Fortran-order arrays are not supported; save a C-order array "
                     "(numpy.ascontiguousarray)");
  auto type = typeFromDescr(descr->text);
  if (!type)
    return std::unexpected(type.error());

  uint64_t byteCount = scalarSize(*type);
  for (int64_t extent : shape->tuple)
    if (__builtin_mul_overflow(byteCount, static_cast<uint64_t>(extent), &byteCount))
      return makeError("the shape's size overflows 64 bits");
  size_t dataStart = headerStart + headerLength;
  uint64_t present = bytes.size() - dataStart;
  if (present < byteCount)
    return makeError("truncated data (" + std::to_string(byteCount) + " bytes expected, " +
                     std::to_string(present) + " present)");
  if (present > byteCount)
    return makeError(std::to_string(present - byteCount) +
                     " unexpected bytes after the array's data");

  HostArray array(*type, shape->tuple);
  std::copy(bytes.begin() + dataStart, bytes.end(), array.bytes.begin());
  if (*type == ScalarType::Bool)
    for (unsigned char &value : array.bytes)
      value = value != 0; // engines rely on bools being 0 or 1
  return array;
}

} // namespace

Expected<HostArray> decodeNpy(std::string_view bytes, const std::string &name) {
  auto array = decodeWithoutName(bytes);
  if (!array)
    return makeError(name + ": " + array.error().message);
  return array;
}

std::string encodeNpy(const HostArray &array) {
  std::string dict =
      "{'descr': '" + std::string(descrOf(array.type)) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < array.shape.size(); ++i)
    dict += (i ? ", " : "") + std::to_string(array.shape[i]);
  dict += array.shape.size() == 1 ? ",), }" : "), }";

  // The data starts at a multiple of 64 bytes; the header ends with '\n'.
  auto padded = [&](size_t prefix) {
    size_t total = prefix + dict.size() + 1;
    return dict + std::string((64 - total % 64) % 64, ' ') + "\n";
  };
  std::string header = padded(10);
  unsigned major = 1;
  if (header.size() > std::numeric_limits<uint16_t>::max()) {
    major = 2;
    header = padded(12);
  }

  std::string out(kMagic);
  out += static_cast<char>(major);
  out += '\0';
  size_t lengthWidth = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lengthWidth; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char *>(array.elementBytes().data()),
             array.elementBytes().size());
  return out;
}

Expected<HostArray> readNpy(const std::string &path) {
  // An ifstream opens a folder, whose reading then fails at the magic string.
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    return makeError("cannot read '" + path + "': it is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError("cannot open '" + path + "': " + std::strerror(errno ? errno : ENOENT));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    return makeError("cannot read '" + path + "'");
  return decodeNpy(contents.str(), path);
}

Status writeNpy(const std::string &path, const HostArray &array) {
  return writeFileAtomically(path, encodeNpy(array), "'" + path + "'");
}

} // namespace loopc
