// Runs the fuzz harness's entry point on files instead of libFuzzer's
// mutations: each argument is a file, or a directory whose files (searched
// recursively) are all run. A crash or an abort in the harness fails the
// run, naming the file being replayed.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    fs::path argument = argv[i];
    std::error_code error;
    if (fs::is_directory(argument, error)) {
      for (const fs::directory_entry &entry : fs::recursive_directory_iterator(argument))
        if (entry.is_regular_file())
          inputs.push_back(entry.path());
    } else if (fs::is_regular_file(argument, error)) {
      inputs.push_back(argument);
    } else {
      std::fprintf(stderr, "fuzz_replay: no file or directory '%s'\n", argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
    return 2;
  }
  for (const fs::path &input : inputs) {
    std::ifstream in(input, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s\n", input.c_str());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  std::printf("fuzz_replay: %zu inputs, no failure\n", inputs.size());
  return 0;
}
