// The .npy reader and writer: round trips of every type and rank, the three
// header versions, and every kind of malformed file.
#include "TestSupport.h"

#include "engine/Npy.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>

using namespace loopc;

namespace {

// A .npy file with the given header dict, written as version `major`.
std::string npyBytes(const std::string &dict, const std::string &data, unsigned major = 1) {
  std::string header = dict + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  size_t width = major == 1 ? 2 : 4;
  for (size_t i = 0; i < width; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string errorOf(const std::string &bytes) {
  auto array = decodeNpy(bytes, "in.npy");
  REQUIRE_FALSE(array.has_value());
  return array.error().message;
}

HostArray sampleArray(ScalarType type, std::vector<int64_t> shape) {
  HostArray array(type, std::move(shape));
  for (size_t i = 0; i < array.elementCount(); ++i)
    array.setFromDouble(i, type == ScalarType::Bool ? double(i % 3 == 0) : double(i) * 1.5 - 7);
  return array;
}

} // namespace

TEST_CASE("every type and rank 0..4 survives a round trip") {
  for (ScalarType type :
       {ScalarType::F32, ScalarType::F64, ScalarType::I32, ScalarType::I64, ScalarType::Bool}) {
    std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {2, 1, 4}, {1, 2, 3, 2}, {3, 0}};
    for (const auto &shape : shapes) {
      CAPTURE(scalarTypeName(type));
      CAPTURE(shape.size());
      HostArray original = sampleArray(type, shape);
      std::string encoded = encodeNpy(original);
      CHECK(encoded[6] == 1);
      // numpy aligns the data to 64 bytes and ends the header with '\n'.
      size_t headerEnd = 10 + (uint8_t(encoded[8]) | uint8_t(encoded[9]) << 8);
      CHECK(headerEnd % 64 == 0);
      CHECK(encoded[headerEnd - 1] == '\n');
      auto decoded = decodeNpy(encoded, "x.npy");
      REQUIRE(decoded.has_value());
      CHECK(decoded->type == type);
      CHECK(decoded->shape == shape);
      CHECK(decoded->bytes == original.bytes);
    }
  }
}

TEST_CASE("the header written is the one numpy writes") {
  std::string encoded = encodeNpy(sampleArray(ScalarType::F32, {3}));
  CHECK(encoded.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }") == 10);
  encoded = encodeNpy(sampleArray(ScalarType::Bool, {2, 3}));
  CHECK(encoded.find("'descr': '|b1'") != std::string::npos);
  CHECK(encoded.find("'shape': (2, 3)") != std::string::npos);
}

TEST_CASE("a header too long for version 1.0 is written as version 2.0") {
  HostArray wide(ScalarType::I32, std::vector<int64_t>(25000, 1));
  std::string encoded = encodeNpy(wide);
  CHECK(encoded[6] == 2);
  auto decoded = decodeNpy(encoded, "wide.npy");
  REQUIRE(decoded.has_value());
  CHECK(decoded->rank() == 25000);
}

TEST_CASE("versions 2.0 and 3.0 headers, other key orders and spacing are read") {
  std::string data(8, '\0');
  data[0] = 7;
  data[4] = 9;
  for (unsigned major : {1u, 2u, 3u}) {
    auto array = decodeNpy(
        npyBytes("{\"shape\":(2,) ,'fortran_order':False,  'descr':'<i4'}", data, major), "v.npy");
    REQUIRE(array.has_value());
    CHECK(array->type == ScalarType::I32);
    CHECK(array->shape == std::vector<int64_t>{2});
    CHECK(array->data<int32_t>()[0] == 7);
    CHECK(array->data<int32_t>()[1] == 9);
  }
  auto longs = decodeNpy(npyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1L, 2L), }",
                                  std::string(16, '\0')),
                         "l.npy");
  REQUIRE(longs.has_value());
  CHECK(longs->shape == std::vector<int64_t>{1, 2});
}

TEST_CASE("bool data is normalized to 0 and 1") {
  auto array = decodeNpy(
      npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\0\5", 2)),
      "b.npy");
  REQUIRE(array.has_value());
  CHECK(array->bytes == loopc::HostBytes{0, 1});
}

TEST_CASE("malformed files are rejected with the file name and the problem") {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  CHECK(errorOf("not numpy at all") == "in.npy: not a .npy file (bad magic string)");
  CHECK(errorOf("") == "in.npy: not a .npy file (bad magic string)");
  CHECK(errorOf(npyBytes(f4, std::string(8, '\0'), 4)).find("unsupported .npy version 4.0") !=
        std::string::npos);
  CHECK(errorOf(npyBytes(f4, std::string(8, '\0')).substr(0, 30)).find("truncated header") !=
        std::string::npos);
  CHECK(errorOf(npyBytes(f4, std::string(5, '\0'))) ==
        "in.npy: truncated data (8 bytes expected, 5 present)");
  CHECK(errorOf(npyBytes(f4, std::string(9, '\0'))).find("unexpected bytes") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                         std::string(8, '\0')))
            .find("big-endian") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
                         std::string(8, '\0')))
            .find("Fortran-order") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
                         std::string(16, '\0')))
            .find("unsupported dtype '|O' (loopc reads f4, f8") != std::string::npos);
  // numpy's one-character codes ('?' for bool) get the same hint.
  CHECK(errorOf(npyBytes("{'descr': '?', 'fortran_order': False, 'shape': (2,), }",
                         std::string(2, '\0')))
            .find("unsupported dtype '?' (loopc reads f4, f8") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                         std::string(8, '\0')))
            .find("unparsable header") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
                         std::string(16, '\0')))
            .find("unsupported dtype '<c8'") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }",
                         std::string(8, '\0')))
            .find("invalid byte order") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "")) ==
        "in.npy: unparsable header (expected ',' or '}' at offset 55)");
  CHECK(errorOf(npyBytes("['descr']", "")).find("unparsable header (the header is not a dict") !=
        std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '<f4', 'shape': (2,)}", "")).find("fortran_order") !=
        std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False}", "")).find("'shape'") !=
        std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", ""))
            .find("non-negative integer") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, "
                         "4294967296), }",
                         ""))
            .find("overflows") != std::string::npos);
  CHECK(errorOf(npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': "
                         "(99999999999999999999,), }",
                         ""))
            .find("too large") != std::string::npos);
}

TEST_CASE("files are written and read back, and missing files are reported") {
  std::string path = (std::filesystem::temp_directory_path() / "loopc_npy_test.npy").string();
  HostArray original = sampleArray(ScalarType::F64, {3, 2});
  REQUIRE(writeNpy(path, original).has_value());
  auto read = readNpy(path);
  REQUIRE(read.has_value());
  CHECK(read->bytes == original.bytes);
  std::remove(path.c_str());
  auto missing = readNpy(path);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message == "cannot open '" + path + "': No such file or directory");
  CHECK_FALSE(writeNpy("/nonexistent-dir/x.npy", original).has_value());
}
