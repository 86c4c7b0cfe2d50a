// Tuned choices of the optimizations (`loopc tune`, `--tuned`): what a
// search found fastest for one kernel, at given sizes, on one device, kept in
// a JSON cache file so later runs reuse it and a project can pin it (commit
// the file, pass it with --tuning-cache).
//
// An entry's key hashes everything the choice depends on: the text of every
// source file loaded (the main file and its imports), the kernel, its sizes
// and integer scalars, the device (Engine::device()) and whether the code is
// bounds-checked. A changed program, other sizes, another GPU or `--unsafe`
// find no entry and run with the defaults.
#pragma once

#include "engine/Engine.h"
#include "passes/Pipeline.h"
#include "support/Diagnostics.h"
#include "support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loopc::driver {

// The cache file: `explicitPath` when given, else $LOOPC_TUNING_CACHE, else
// $XDG_CACHE_HOME/loopc/tuning.json (an absolute $XDG_CACHE_HOME only, as the
// XDG spec says), else $HOME/.cache/loopc/tuning.json, else
// .loopc-tuning.json in the current folder.
std::string tuningCachePath(const std::string &explicitPath);

// What a tuned choice is for.
struct TuningKey {
  std::string hash; // 16 hex digits over everything below and the sources' text
  std::string kernel;
  std::map<std::string, int64_t> values; // sizes and integer scalars
  std::string device;
  bool boundsChecked = true;
};
TuningKey tuningKey(const SourceManager &sources, const KernelDecl &kernel, const KernelArgs &args,
                    const std::string &device, bool boundsChecked);

struct TunedChoice {
  passes::PassChoices choices;
  double medianMs = 0;  // the choice's time when it was tuned
  double defaultMs = 0; // the defaults' time in the same search
  std::string date;     // YYYY-MM-DD
  // Every candidate the search looked at on a GPU the performance model
  // knows: its choices, what the model predicted, and what was measured
  // (none when the prediction ruled it out); kept to calibrate the model.
  struct Candidate {
    std::string choices;
    double predictedMs = 0;
    std::optional<double> measuredMs;
  };
  std::vector<Candidate> candidates;
};

// The choice kept for `key` in the cache at `path`; none when the file or the
// entry does not exist. A file that is not a tuning cache is an error.
Expected<std::optional<TunedChoice>> findTunedChoice(const std::string &path, const TuningKey &key);

// Keeps `choice` for `key` in the cache at `path` (created with its folder,
// replacing an entry of the same key). Safe when processes store at once:
// under an flock on `<path>.lock` the cache is read again and replaced by
// renaming a complete file over it, so every process's entry is kept and a
// reader sees the old file or the new one.
Status storeTunedChoice(const std::string &path, const TuningKey &key, const std::string &file,
                        const TunedChoice &choice);

// Whether the cache at `path` can be read (absent is fine): `tune` checks it
// before its search, not after.
Status checkTuningCache(const std::string &path);

// "register_tile=8 stage_length=16, skipping stage_shared"; "the defaults".
std::string describeChoices(const passes::PassChoices &choices);

} // namespace loopc::driver
