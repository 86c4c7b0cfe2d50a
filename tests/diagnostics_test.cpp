// Golden tests of user-facing errors: every tests/diagnostics/<name>.loop is
// loaded and checked, and everything printed must equal <name>.expected
// exactly. Paths are printed relative to the source root, so the goldens do
// not depend on where the tree lives. To regenerate after a deliberate
// change of wording, run with LOOPC_UPDATE_GOLDENS=1 and review every diff.
#include "TestSupport.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace loopc;

namespace {

std::vector<std::string> goldenNames() {
  std::vector<std::string> names;
  for (const auto &entry :
       std::filesystem::directory_iterator(test::sourcePath("tests/diagnostics")))
    if (entry.is_regular_file() && entry.path().extension() == ".loop")
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool updatingGoldens() {
  const char *update = std::getenv("LOOPC_UPDATE_GOLDENS");
  return update && std::string(update) == "1";
}

} // namespace

TEST_CASE("every diagnostics golden prints exactly its expected errors") {
  REQUIRE(chdir(test::sourcePath("").c_str()) == 0);
  std::vector<std::string> names = goldenNames();
  REQUIRE(names.size() > 40);
  for (const std::string &name : names) {
    SUBCASE(name.c_str()) {
      std::string source = "tests/diagnostics/" + name + ".loop";
      std::string expectedPath = "tests/diagnostics/" + name + ".expected";
      auto loaded = test::loadFile(source);
      CHECK_MESSAGE(loaded->diagnostics.find(": error: ") != std::string::npos,
                    source << " must produce at least one error");
      CHECK(loaded->program == nullptr);
      if (updatingGoldens()) {
        std::ofstream(expectedPath, std::ios::binary) << loaded->diagnostics;
        continue;
      }
      REQUIRE_MESSAGE(std::filesystem::exists(expectedPath), source << " has no .expected file");
      CHECK(loaded->diagnostics == test::readFile(expectedPath));
    }
  }
}
