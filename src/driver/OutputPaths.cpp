// Refusing outputs that overwrite inputs or each other (see OutputPaths.h).
#include "driver/OutputPaths.h"

#include <filesystem>

namespace loopc::driver {

bool isSameFile(const std::string &a, const std::string &b) {
  namespace fs = std::filesystem;
  std::error_code error;
  bool aExists = fs::exists(a, error);
  bool bExists = fs::exists(b, error);
  if (aExists && bExists) {
    bool same = fs::equivalent(a, b, error);
    return !error && same;
  }
  if (aExists != bExists)
    return false;
  // Neither exists yet: compare where they would be created.
  fs::path aPath = fs::weakly_canonical(fs::absolute(a, error), error);
  fs::path bPath = fs::weakly_canonical(fs::absolute(b, error), error);
  return aPath.lexically_normal() == bPath.lexically_normal();
}

Status checkDistinctOutputs(const std::vector<PathUse> &inputs,
                            const std::vector<PathUse> &outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const PathUse &input : inputs)
      if (isSameFile(outputs[i].path, input.path))
        return makeError(outputs[i].description + " would overwrite " + input.description +
                         "; write the output elsewhere");
    for (size_t j = 0; j < i; ++j)
      if (isSameFile(outputs[i].path, outputs[j].path))
        return makeError(outputs[j].description + " and " + outputs[i].description +
                         " write the same file; give each output a file of its own");
  }
  return {};
}

std::vector<PathUse> sourceFileUses(const SourceManager &sources) {
  std::vector<PathUse> uses;
  for (size_t id = 1; id < sources.fileCount(); ++id) { // id 0 is "no file"
    const std::string &path = sources.file(static_cast<uint32_t>(id)).path;
    uses.push_back({path, (id == 1 ? "the program file '" : "the imported file '") + path + "'"});
  }
  return uses;
}

} // namespace loopc::driver
