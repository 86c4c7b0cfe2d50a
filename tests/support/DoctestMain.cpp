// The doctest main shared by every test executable. What loopc caches (the
// CPU's probe, tuned choices kept without --tuning-cache) goes to the build
// tree while the tests run, not to the user's home: a probe made while the
// suite loads the machine would describe a slower CPU to later runs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

int main(int argc, char **argv) {
  std::filesystem::path cache = std::filesystem::path(LOOPC_BINARY).parent_path() / "test-cache";
  setenv("XDG_CACHE_HOME", cache.c_str(), /*overwrite=*/1);
  return doctest::Context(argc, argv).run();
}
