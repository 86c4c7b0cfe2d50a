// The tuning cache shared by tunes running at once (parallel builds, CI jobs):
// every process's entries are kept, and a reader never sees a half-written file.
#include "TestSupport.h"

#include "driver/Tuning.h"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

using namespace loopc;
using loopc::test::TempDir;

namespace {

driver::TuningKey keyFor(int process, int entry) {
  driver::TuningKey key;
  key.kernel = "k";
  key.values = {{"P", process}, {"E", entry}};
  key.device = "cpu";
  key.hash = "p" + std::to_string(process) + "e" + std::to_string(entry);
  return key;
}

} // namespace

TEST_CASE("processes storing into one tuning cache at once keep every entry, and readers never "
          "see a partial file") {
  TempDir dir;
  std::string cache = dir.at("folder/tuning.json");
  constexpr int kProcesses = 6, kEntries = 15;
  std::vector<pid_t> children;
  for (int process = 0; process < kProcesses; ++process) {
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // A child exits with 1 on any failure: a store or a read of the file as
      // another writes it.
      bool ok = true;
      for (int entry = 0; entry < kEntries; ++entry) {
        driver::TunedChoice choice;
        choice.medianMs = entry;
        ok &= driver::storeTunedChoice(cache, keyFor(process, entry), "k.loop", choice).has_value();
        auto found = driver::findTunedChoice(cache, keyFor((process + 1) % kProcesses, 0));
        ok &= found.has_value();
      }
      _exit(ok ? 0 : 1);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  std::ifstream in(cache);
  nlohmann::json stored = nlohmann::json::parse(in);
  CHECK(stored["entries"].size() == size_t{kProcesses * kEntries});
  for (int process = 0; process < kProcesses; ++process)
    for (int entry = 0; entry < kEntries; ++entry) {
      auto found = driver::findTunedChoice(cache, keyFor(process, entry));
      REQUIRE(found.has_value());
      REQUIRE(found->has_value());
      CHECK((*found)->medianMs == entry);
    }
  // No temporary file is left beside the cache; the lock file stays.
  size_t files = 0;
  for ([[maybe_unused]] const auto &file : std::filesystem::directory_iterator(dir.at("folder")))
    ++files;
  CHECK(files == 2);
}

TEST_CASE("the tuning cache keeps every parameter, and the candidates with the model's prediction "
          "and the measured time") {
  TempDir dir;
  std::string cache = dir.at("tuning.json");
  driver::TunedChoice choice;
  REQUIRE(passes::setPassParameter(choice.choices.parameters, "copies_in_flight=8"));
  REQUIRE(passes::setPassParameter(choice.choices.parameters, "register_tile=8"));
  choice.medianMs = 0.5;
  choice.candidates = {{"the defaults", 0.97, 0.76},
                       {"copies_in_flight=8", 0.52, 0.41},
                       {"register_tile=1", 2.4, std::nullopt}};
  REQUIRE(driver::storeTunedChoice(cache, keyFor(0, 0), "k.loop", choice));
  std::ifstream in(cache);
  nlohmann::json entry = nlohmann::json::parse(in)["entries"][0];
  CHECK(entry["parameters"]["copies_in_flight"] == 8);
  CHECK(entry["parameters"]["stage_min_reuse"] == 16);
  REQUIRE(entry["candidates"].size() == 3);
  CHECK(entry["candidates"][1]["choices"] == "copies_in_flight=8");
  CHECK(entry["candidates"][1]["predicted_ms"] == 0.52);
  CHECK(entry["candidates"][1]["measured_ms"] == 0.41);
  // Ruled out by the model: predicted, never measured.
  CHECK(entry["candidates"][2]["measured_ms"].is_null());
  auto found = driver::findTunedChoice(cache, keyFor(0, 0));
  REQUIRE(found);
  REQUIRE(*found);
  CHECK((*found)->choices.parameters.copiesInFlight == 8);
  CHECK((*found)->choices.parameters.registerTile == 8);
}
