// Loads the main module and its imports breadth-first. Files are identified by
// canonical path so a module imported twice (or through a cycle) is parsed
// once; diagnostics name files by the path as the user would write it.
#include "frontend/Loader.h"

#include "frontend/Parser.h"
#include "support/Error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <set>

namespace loopc {

namespace fs = std::filesystem;

std::string fileIdentity(const std::string &path) {
  std::error_code error;
  fs::path canonical = fs::weakly_canonical(path, error);
  return (error ? fs::absolute(path, error) : canonical).lexically_normal().string();
}

namespace {

class ProgramLoader {
public:
  ProgramLoader(SourceManager &sources, DiagnosticEngine &diagnostics, const LoadOptions &options)
      : sources_(sources), diagnostics_(diagnostics), options_(options) {}

  // Parses the main file (already in the SourceManager) and everything it
  // imports. `identity` is empty for a main module given as text.
  std::unique_ptr<Program> load(uint32_t mainFile, const fs::path &mainDir,
                                const std::string &identity);

private:
  struct Pending {
    const Module *module;
    fs::path dir; // where the module's relative imports are resolved
  };

  void loadImport(const ImportDecl &import, const fs::path &importerDir);
  std::vector<fs::path> candidatePaths(const ImportDecl &import, const fs::path &importerDir) const;

  SourceManager &sources_;
  DiagnosticEngine &diagnostics_;
  const LoadOptions &options_;
  std::unique_ptr<Program> program_ = std::make_unique<Program>();
  std::set<std::string> loaded_;
  std::deque<Pending> pending_;
};

std::unique_ptr<Program> ProgramLoader::load(uint32_t mainFile, const fs::path &mainDir,
                                             const std::string &identity) {
  unsigned errorsBefore = diagnostics_.errorCount();
  if (!identity.empty())
    loaded_.insert(identity);
  for (const std::string &file : options_.includedFiles)
    loaded_.insert(fileIdentity(file));
  std::unique_ptr<Module> main = parseModule(mainFile, sources_, diagnostics_);
  if (!main)
    return nullptr;
  pending_.push_back({main.get(), mainDir});
  program_->modules.push_back(std::move(main));
  while (!pending_.empty()) {
    Pending next = pending_.front();
    pending_.pop_front();
    for (const ImportDecl &import : next.module->imports)
      loadImport(import, next.dir);
  }
  if (diagnostics_.errorCount() > errorsBefore)
    return nullptr;
  return std::move(program_);
}

std::vector<fs::path> ProgramLoader::candidatePaths(const ImportDecl &import,
                                                    const fs::path &importerDir) const {
  if (import.isPath)
    return {(importerDir / import.target).lexically_normal()};
  std::vector<fs::path> candidates;
  for (const std::string &dir : options_.stdlibDirs)
    candidates.push_back((fs::path(dir) / (import.target + ".loop")).lexically_normal());
  return candidates;
}

void ProgramLoader::loadImport(const ImportDecl &import, const fs::path &importerDir) {
  if (import.target.empty()) {
    diagnostics_.error(import.range, "an import names a module (`import linalg;`) or a file "
                                     "(`import \"path.loop\";`), not an empty path");
    return;
  }
  std::vector<fs::path> candidates = candidatePaths(import, importerDir);
  auto found = std::ranges::find_if(candidates, [](const fs::path &candidate) {
    std::error_code error;
    return fs::exists(candidate, error);
  });
  if (found == candidates.end()) {
    std::string message = "cannot find module '" + import.target + "'";
    if (candidates.empty()) {
      message += " (no standard library directory is configured)";
    } else {
      message += " (looked in ";
      for (size_t i = 0; i < candidates.size(); ++i)
        message += (i > 0 ? ", " : "") + candidates[i].string();
      message += ")";
    }
    diagnostics_.error(import.range, message);
    return;
  }
  if (!loaded_.insert(fileIdentity(*found)).second)
    return;
  Expected<std::string> text = readSourceFile(*found);
  if (!text) {
    diagnostics_.error(import.range,
                       "cannot open '" + found->string() + "': " + text.error().message);
    return;
  }
  uint32_t file = sources_.addFile(found->string(), std::move(*text));
  sources_.setImportSite(file, import.range);
  std::unique_ptr<Module> module = parseModule(file, sources_, diagnostics_);
  if (!module)
    return;
  pending_.push_back({module.get(), found->parent_path()});
  program_->modules.push_back(std::move(module));
}

} // namespace

std::vector<std::string> defaultStdlibDirs(const char *argv0) {
  std::vector<std::string> dirs;
  auto add = [&](const fs::path &dir) {
    std::string normal = dir.lexically_normal().string();
    if (!normal.empty() && std::ranges::find(dirs, normal) == dirs.end())
      dirs.push_back(normal);
  };
  if (const char *fromEnvironment = std::getenv("LOOPC_STDLIB")) {
    std::string list = fromEnvironment;
    for (size_t start = 0; start <= list.size();) {
      size_t colon = std::min(list.find(':', start), list.size());
      add(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  std::error_code error;
  fs::path executable;
  if (argv0 && std::strchr(argv0, '/'))
    executable = fs::absolute(argv0, error);
  else
    executable = fs::read_symlink("/proc/self/exe", error);
  if (!error && !executable.empty()) {
    fs::path exeDir = executable.parent_path();
    add(exeDir / ".." / "stdlib");
    add(exeDir / ".." / "share" / "loopc" / "stdlib");
  }
  add(LOOPC_SOURCE_STDLIB_DIR);
  return dirs;
}

std::unique_ptr<Program> loadProgram(const std::string &path, SourceManager &sources,
                                     DiagnosticEngine &diagnostics, const LoadOptions &options) {
  Expected<std::string> text = readSourceFile(path);
  if (!text) {
    diagnostics.error({}, "cannot open '" + path + "': " + text.error().message);
    return nullptr;
  }
  uint32_t file = sources.addFile(path, std::move(*text));
  return ProgramLoader(sources, diagnostics, options)
      .load(file, fs::path(path).parent_path(), fileIdentity(path));
}

std::unique_ptr<Program> loadProgramFromText(std::string displayName, std::string text,
                                             SourceManager &sources, DiagnosticEngine &diagnostics,
                                             const LoadOptions &options) {
  uint32_t file = sources.addFile(std::move(displayName), std::move(text));
  return ProgramLoader(sources, diagnostics, options).load(file, fs::path("."), "");
}

Expected<std::string> readSourceFile(const std::string &path) {
  std::error_code error;
  if (fs::is_directory(path, error))
    return makeError("is a directory");
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return makeError(std::strerror(errno));
  // A device or a pipe may never end (`import "/dev/zero";` filled memory).
  constexpr size_t kMaxSourceBytes = size_t{64} << 20;
  std::string text;
  char buffer[1 << 16];
  size_t count;
  while ((count = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    text.append(buffer, count);
    if (text.size() > kMaxSourceBytes) {
      std::fclose(file);
      return makeError("is larger than 64 MiB, too large for a source file");
    }
  }
  bool failed = std::ferror(file);
  int readErrno = errno;
  std::fclose(file);
  if (failed)
    return makeError(std::strerror(readErrno));
  return text;
}

} // namespace loopc
