// The tuning cache (see Tuning.h).
#include "driver/Tuning.h"

#include "engine/Bindings.h"
#include "support/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace loopc::driver {

namespace {

constexpr int kCacheVersion = 1;

// FNV-1a: stable across builds and machines, unlike std::hash.
class Fnv1a {
public:
  void add(const std::string &text) {
    for (unsigned char c : text)
      hash_ = (hash_ ^ c) * 0x100000001b3ULL;
    hash_ = (hash_ ^ 0xff) * 0x100000001b3ULL; // a separator no text ends with
  }
  std::string hex() const {
    std::ostringstream out;
    out << std::hex;
    out.width(16);
    out.fill('0');
    out << hash_;
    return out.str();
  }

private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

Expected<nlohmann::json> readCache(const std::string &path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    return makeError("the tuning cache '" + path + "' is a directory; give a file with " +
                     "--tuning-cache");
  std::ifstream in(path);
  if (!in)
    return nlohmann::json{{"version", kCacheVersion}, {"entries", nlohmann::json::array()}};
  nlohmann::json cache;
  try {
    cache = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  } catch (const std::exception &problem) { // a read error of the stream
    return makeError("cannot read the tuning cache '" + path + "': " + problem.what());
  }
  if (cache.is_discarded() || !cache.is_object() || !cache.contains("entries") ||
      !cache["entries"].is_array() || cache.value("version", 0) != kCacheVersion)
    return makeError("'" + path + "' is not a loopc tuning cache (version " +
                     std::to_string(kCacheVersion) + "); remove it or give another with " +
                     "--tuning-cache");
  return cache;
}

std::string today() {
  auto now = std::chrono::system_clock::now();
  std::chrono::year_month_day date{std::chrono::floor<std::chrono::days>(now)};
  std::ostringstream out;
  out << static_cast<int>(date.year()) << "-" << (unsigned(date.month()) < 10 ? "0" : "")
      << unsigned(date.month()) << "-" << (unsigned(date.day()) < 10 ? "0" : "")
      << unsigned(date.day());
  return out.str();
}

// An entry's key, or "" when it has none of the right type.
std::string keyOf(const nlohmann::json &entry) {
  if (!entry.is_object() || !entry.contains("key") || !entry["key"].is_string())
    return "";
  return entry["key"].get<std::string>();
}

} // namespace

std::string tuningCachePath(const std::string &explicitPath) {
  if (!explicitPath.empty())
    return explicitPath;
  if (const char *path = std::getenv("LOOPC_TUNING_CACHE"); path && *path)
    return path;
  // The XDG Base Directory spec: a relative path there is invalid and ignored.
  if (const char *cache = std::getenv("XDG_CACHE_HOME"); cache && *cache == '/')
    return std::string(cache) + "/loopc/tuning.json";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/loopc/tuning.json";
  return ".loopc-tuning.json";
}

TuningKey tuningKey(const SourceManager &sources, const KernelDecl &kernel, const KernelArgs &args,
                    const std::string &device, bool boundsChecked) {
  TuningKey key;
  key.kernel = kernel.name;
  key.values = integerValues(kernel, args);
  for (const auto &[name, value] : args.sizes)
    key.values[name] = value;
  key.device = device;
  key.boundsChecked = boundsChecked;
  Fnv1a hash;
  hash.add("loopc tuning " + std::to_string(kCacheVersion));
  for (size_t id = 1; id < sources.fileCount(); ++id) // id 0 is "no file"
    hash.add(sources.file(id).text);
  hash.add(key.kernel);
  for (const auto &[name, value] : key.values)
    hash.add(name + "=" + std::to_string(value));
  hash.add(key.device);
  // Entries kept before checks were the default hashed nothing here: they
  // were tuned unchecked, and serve --unsafe runs.
  if (boundsChecked)
    hash.add("bounds checked");
  if (kernel.fpContract == FpContract::Off)
    hash.add("fp contract off");
  key.hash = hash.hex();
  return key;
}

Expected<std::optional<TunedChoice>> findTunedChoice(const std::string &path,
                                                     const TuningKey &key) {
  auto cache = readCache(path);
  if (!cache)
    return std::unexpected(cache.error());
  for (const nlohmann::json &entry : (*cache)["entries"]) {
    if (keyOf(entry) != key.hash)
      continue;
    TunedChoice choice;
    choice.choices.kernelSchedules = false; // whole: the search started from the schedule
    try {
      for (const std::string &pass : entry.at("skipped").get<std::vector<std::string>>())
        choice.choices.skipped.insert(pass);
      for (const auto &[name, value] : entry.at("parameters").items())
        if (Status set = passes::setPassParameter(
                choice.choices.parameters, name + "=" + std::to_string(value.get<int64_t>()));
            !set)
          return makeError("tuning cache '" + path + "': " + set.error().message);
      choice.medianMs = entry.value("median_ms", 0.0);
      choice.defaultMs = entry.value("default_ms", 0.0);
      choice.date = entry.value("date", "");
    } catch (const nlohmann::json::exception &problem) {
      return makeError("tuning cache '" + path + "': a malformed entry for kernel '" + key.kernel +
                       "' (" + problem.what() + ")");
    }
    return choice;
  }
  return std::nullopt;
}

namespace {

nlohmann::json candidatesJson(const std::vector<TunedChoice::Candidate> &candidates) {
  nlohmann::json list = nlohmann::json::array();
  for (const TunedChoice::Candidate &candidate : candidates) {
    nlohmann::json entry = {{"choices", candidate.choices},
                            {"predicted_ms", candidate.predictedMs}};
    entry["measured_ms"] =
        candidate.measuredMs ? nlohmann::json(*candidate.measuredMs) : nlohmann::json(nullptr);
    list.push_back(entry);
  }
  return list;
}

// An exclusive advisory lock (flock) on `<cache>.lock`, held while it lives:
// tunes running at once each re-read the cache under it, add their entry and
// write it back, so none loses another's entry.
class CacheLock {
public:
  explicit CacheLock(const std::string &cachePath)
      : fd_(::open((cachePath + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666)) {
    int locked = -1;
    while (fd_ >= 0 && (locked = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (fd_ < 0 || locked != 0)
      error_ = errno;
  }
  ~CacheLock() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }
  CacheLock(const CacheLock &) = delete;
  CacheLock &operator=(const CacheLock &) = delete;
  // 0 once the lock is held, else why it is not.
  int error() const { return error_; }

private:
  int fd_;
  int error_ = 0;
};

} // namespace

Status storeTunedChoice(const std::string &path, const TuningKey &key, const std::string &file,
                        const TunedChoice &choice) {
  std::error_code error;
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty())
    std::filesystem::create_directories(folder, error);
  CacheLock lock(path);
  if (lock.error() != 0)
    return makeError("cannot lock the tuning cache '" + path + "' (with " + path +
                     ".lock): " + std::strerror(lock.error()));
  // Read under the lock: the entries other tunes stored since this one began are kept.
  auto cache = readCache(path);
  if (!cache)
    return std::unexpected(cache.error());
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json &entry : (*cache)["entries"])
    if (keyOf(entry) != key.hash)
      kept.push_back(entry);
  nlohmann::json parameters = nlohmann::json::object();
  for (const auto &[name, value] : passes::namedParameters(choice.choices.parameters))
    parameters[name] = value;
  kept.push_back({{"key", key.hash},
                  {"file", file},
                  {"kernel", key.kernel},
                  {"values", key.values},
                  {"device", key.device},
                  {"skipped", choice.choices.skipped},
                  {"parameters", parameters},
                  {"candidates", candidatesJson(choice.candidates)},
                  {"median_ms", choice.medianMs},
                  {"default_ms", choice.defaultMs},
                  {"date", choice.date.empty() ? today() : choice.date}});
  (*cache)["entries"] = std::move(kept);
  // A reader (a `run --tuned`, another tune) sees the old cache or the new
  // one, never half.
  return writeFileAtomically(path, cache->dump(2) + "\n", "the tuning cache '" + path + "'");
}

Status checkTuningCache(const std::string &path) {
  // The nearest existing folder on the way must be one (a file there would
  // make the write at the end fail).
  std::error_code error;
  for (std::filesystem::path folder = std::filesystem::path(path).parent_path(); !folder.empty();
       folder = folder.parent_path()) {
    if (!std::filesystem::exists(folder, error))
      continue;
    if (!std::filesystem::is_directory(folder, error))
      return makeError("cannot write the tuning cache '" + path + "': '" + folder.string() +
                       "' is not a folder");
    break;
  }
  auto cache = readCache(path);
  if (!cache)
    return std::unexpected(cache.error());
  return {};
}

std::string describeChoices(const passes::PassChoices &choices) {
  std::string text = passes::describeChangedParameters(choices.parameters);
  if (!choices.skipped.empty()) {
    text += text.empty() ? "skipping " : ", skipping ";
    bool first = true;
    for (const std::string &pass : choices.skipped) {
      text += (first ? "" : " ") + pass;
      first = false;
    }
  }
  return text.empty() ? "the defaults" : text;
}

} // namespace loopc::driver
