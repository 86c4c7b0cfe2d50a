// Running ptxas and reading its `-v` report (see Ptxas.h).
#include "codegen/Ptxas.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace loopc::codegen {

namespace {

bool isExecutable(const std::filesystem::path &path) {
  return ::access(path.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(path);
}

// A private temporary directory, removed with the object.
class TemporaryDirectory {
public:
  TemporaryDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "loopc-ptxas-XXXXXX").string();
    if (::mkdtemp(pattern.data()))
      path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace

std::optional<std::string> findPtxas() {
  if (const char *configured = std::getenv("LOOPC_PTXAS"); configured && *configured)
    return isExecutable(configured) ? std::optional<std::string>(configured) : std::nullopt;
  if (isExecutable(LOOPC_PTXAS_PATH))
    return LOOPC_PTXAS_PATH;
  if (const char *path = std::getenv("PATH")) {
    std::stringstream directories(path);
    std::string directory;
    while (std::getline(directories, directory, ':'))
      if (!directory.empty() && isExecutable(std::filesystem::path(directory) / "ptxas"))
        return (std::filesystem::path(directory) / "ptxas").string();
  }
  return std::nullopt;
}

Expected<std::vector<PtxasKernelReport>> runPtxas(const std::string &ptxas, const std::string &ptx,
                                                  const std::string &gpu) {
  TemporaryDirectory directory;
  if (directory.path().empty())
    return makeError("cannot create a temporary directory for ptxas");
  std::filesystem::path input = directory.path() / "module.ptx";
  std::filesystem::path log = directory.path() / "ptxas.log";
  {
    std::ofstream out(input);
    out << ptx;
    if (!out)
      return makeError("cannot write " + input.string());
  }
  // Every argument is a path we made or a validated GPU name: no quoting issues.
  std::string command = "'" + ptxas + "' -v --gpu-name " + gpu + " '" + input.string() + "' -o '" +
                        (directory.path() / "module.cubin").string() + "' > '" + log.string() +
                        "' 2>&1";
  int status = std::system(command.c_str());
  std::ifstream logStream(log);
  std::stringstream output;
  output << logStream.rdbuf();
  if (status != 0)
    return makeError("ptxas failed for " + gpu + ":\n" + output.str());
  return parsePtxasReport(output.str());
}

std::vector<PtxasKernelReport> parsePtxasReport(const std::string &output) {
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex shared(R"((\d+) bytes smem)");
  std::vector<PtxasKernelReport> reports;
  std::stringstream lines(output);
  std::string line;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, match, properties)) {
      reports.push_back({.name = match[1]});
      continue;
    }
    if (reports.empty())
      continue;
    PtxasKernelReport &current = reports.back();
    if (std::regex_search(line, match, frame)) {
      current.stackBytes = std::stoi(match[1]);
      current.spillStoreBytes = std::stoi(match[2]);
      current.spillLoadBytes = std::stoi(match[3]);
    }
    if (std::regex_search(line, match, used))
      current.registers = std::stoi(match[1]);
    if (std::regex_search(line, match, shared))
      current.sharedBytes = std::stoi(match[1]);
  }
  return reports;
}

} // namespace loopc::codegen
