// The CPUs the performance model knows, and the probe that measures this
// one (see CpuDevices.h).
#include "perf/CpuDevices.h"

#include "support/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loopc::perf {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The fastest of a few runs: what the machine can do when nothing else
// takes it.
template <typename Run> double fastest(int runs, Run run) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i)
    best = std::min(best, run());
  return best;
}

// Twelve independent chains of vector FMAs, each in a register of its own:
// enough to cover an FMA's latency on both of a core's FMA pipes. Returns
// seconds for `iterations`.
#if defined(__x86_64__)
#define LOOPC_TWELVE(step)                                                                         \
  step(a0) step(a1) step(a2) step(a3) step(a4) step(a5) step(a6) step(a7) step(a8) step(a9)        \
      step(a10) step(a11)

__attribute__((target("avx512f"))) double timeFma512(int64_t iterations) {
  __m512 scale = _mm512_set1_ps(0.9999f), shift = _mm512_set1_ps(1e-4f);
  volatile float seed = 0.001f; // a different start for each chain: none is merged
  float next = seed;
#define LOOPC_START(a)                                                                             \
  __m512 a = _mm512_set1_ps(next);                                                                 \
  next += seed;
  LOOPC_TWELVE(LOOPC_START)
#undef LOOPC_START
  auto start = Clock::now();
  for (int64_t n = 0; n < iterations; ++n) {
#define LOOPC_STEP(a) a = _mm512_fmadd_ps(a, scale, shift);
    LOOPC_TWELVE(LOOPC_STEP)
#undef LOOPC_STEP
  }
  double seconds = secondsSince(start);
  __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  sum = _mm512_add_ps(sum, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  asm volatile("" : : "x"(lanes[0]));
  return seconds;
}

__attribute__((target("avx2,fma"))) double timeFma256(int64_t iterations) {
  __m256 scale = _mm256_set1_ps(0.9999f), shift = _mm256_set1_ps(1e-4f);
  volatile float seed = 0.001f;
  float next = seed;
#define LOOPC_START(a)                                                                             \
  __m256 a = _mm256_set1_ps(next);                                                                 \
  next += seed;
  LOOPC_TWELVE(LOOPC_START)
#undef LOOPC_START
  auto start = Clock::now();
  for (int64_t n = 0; n < iterations; ++n) {
#define LOOPC_STEP(a) a = _mm256_fmadd_ps(a, scale, shift);
    LOOPC_TWELVE(LOOPC_STEP)
#undef LOOPC_STEP
  }
  double seconds = secondsSince(start);
  __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  sum = _mm256_add_ps(sum, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  asm volatile("" : : "x"(lanes[0]));
  return seconds;
}
#undef LOOPC_TWELVE
#endif

// Eight independent chains of scalar multiply-then-add (2 operations each
// step), each in a register of its own, or one chain of dependent
// additions.
double timeScalarOps(int64_t iterations, bool dependent) {
  volatile float seed = 0.9999f;
  float scale = seed, shift = 1e-4f * seed;
  float c0 = seed, c1 = c0 + shift, c2 = c1 + shift, c3 = c2 + shift, c4 = c3 + shift,
        c5 = c4 + shift, c6 = c5 + shift, c7 = c6 + shift;
  auto start = Clock::now();
  if (dependent) {
    for (int64_t n = 0; n < iterations; ++n) {
      c0 += shift;
      asm volatile("" : "+x"(c0));
    }
  } else {
    for (int64_t n = 0; n < iterations; ++n) {
      c0 = c0 * scale + shift, c1 = c1 * scale + shift, c2 = c2 * scale + shift;
      c3 = c3 * scale + shift, c4 = c4 * scale + shift, c5 = c5 * scale + shift;
      c6 = c6 * scale + shift, c7 = c7 * scale + shift;
      asm volatile(""
                   : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6),
                     "+x"(c7));
    }
  }
  double seconds = secondsSince(start);
  float sink = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7;
  asm volatile("" : : "x"(sink));
  return seconds;
}

// One chain of dependent multiply-adds (`c = c * scale + shift`, one FMA
// where the CPU has them), or of dependent maxima (`c = c > v ? c : v`, as
// a running maximum compiles).
#if defined(__x86_64__)
__attribute__((target("fma"))) double timeFmaChain(int64_t iterations) {
  volatile float seed = 0.9999f;
  __m128 c = _mm_set_ss(seed), scale = _mm_set_ss(seed), shift = _mm_set_ss(1e-4f * seed);
  auto start = Clock::now();
  for (int64_t n = 0; n < iterations; ++n) {
    c = _mm_fmadd_ss(c, scale, shift);
    asm volatile("" : "+x"(c));
  }
  double seconds = secondsSince(start);
  float sink = _mm_cvtss_f32(c);
  asm volatile("" : : "x"(sink));
  return seconds;
}
#endif

double timeMaxChain(int64_t iterations) {
  volatile float seed = 0.5f;
  float c = seed, v = seed * 0.5f;
  auto start = Clock::now();
  for (int64_t n = 0; n < iterations; ++n) {
    c = c > v ? c : v;
    asm volatile("" : "+x"(c), "+x"(v));
  }
  double seconds = secondsSince(start);
  asm volatile("" : : "x"(c));
  return seconds;
}

// Twelve independent chains of vector divisions (`a = 1 / a`, which stays
// finite) or square roots (`a = sqrt(a)`, which tends to 1) on the widest
// vectors: the divider's throughput. Returns seconds for `iterations`.
#if defined(__x86_64__)
#define LOOPC_DIVIDER_PROBE(name, attribute, vec, set1, div, sqrt, add)                            \
  __attribute__((target(attribute))) double name(int64_t iterations, bool roots) {                 \
    vec one = set1(1.0f);                                                                          \
    volatile float seed = 1.5f;                                                                    \
    float next = seed;                                                                             \
    vec a0 = set1(next), a1 = set1(next + 0.01f), a2 = set1(next + 0.02f),                         \
        a3 = set1(next + 0.03f), a4 = set1(next + 0.04f), a5 = set1(next + 0.05f),                 \
        a6 = set1(next + 0.06f), a7 = set1(next + 0.07f), a8 = set1(next + 0.08f),                 \
        a9 = set1(next + 0.09f), a10 = set1(next + 0.1f), a11 = set1(next + 0.11f);                \
    auto start = Clock::now();                                                                     \
    if (roots) {                                                                                   \
      for (int64_t n = 0; n < iterations; ++n) {                                                   \
        a0 = sqrt(a0), a1 = sqrt(a1), a2 = sqrt(a2), a3 = sqrt(a3), a4 = sqrt(a4);                 \
        a5 = sqrt(a5), a6 = sqrt(a6), a7 = sqrt(a7), a8 = sqrt(a8), a9 = sqrt(a9);                 \
        a10 = sqrt(a10), a11 = sqrt(a11);                                                          \
      }                                                                                            \
    } else {                                                                                       \
      for (int64_t n = 0; n < iterations; ++n) {                                                   \
        a0 = div(one, a0), a1 = div(one, a1), a2 = div(one, a2), a3 = div(one, a3);                \
        a4 = div(one, a4), a5 = div(one, a5), a6 = div(one, a6), a7 = div(one, a7);                \
        a8 = div(one, a8), a9 = div(one, a9), a10 = div(one, a10), a11 = div(one, a11);            \
      }                                                                                            \
    }                                                                                              \
    double seconds = secondsSince(start);                                                          \
    vec sum = add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7)));                   \
    sum = add(sum, add(add(a8, a9), add(a10, a11)));                                               \
    asm volatile("" : : "x"(sum));                                                                 \
    return seconds;                                                                                \
  }
// (_mm512_sqrt_ps's undefined passthrough upsets GCC's warnings.)
#define LOOPC_SQRT512(a) _mm512_mask_sqrt_ps(a, 0xffff, a)
LOOPC_DIVIDER_PROBE(timeDivider512, "avx512f", __m512, _mm512_set1_ps, _mm512_div_ps, LOOPC_SQRT512,
                    _mm512_add_ps)
#undef LOOPC_SQRT512
LOOPC_DIVIDER_PROBE(timeDivider256, "avx2", __m256, _mm256_set1_ps, _mm256_div_ps, _mm256_sqrt_ps,
                    _mm256_add_ps)
#undef LOOPC_DIVIDER_PROBE
#endif

// Nanoseconds a call of libmvec's exp on 8 lanes (AVX2) takes, many
// independent calls in a row, or 0 where the library is missing.
#if defined(__x86_64__)
using VectorRoutine8 = __m256 (*)(__m256);
__attribute__((target("avx2"))) double timeVectorExp(VectorRoutine8 routine, int64_t iterations) {
  __m256 inputs[8];
  for (int i = 0; i < 8; ++i)
    inputs[i] = _mm256_set1_ps(0.1f * static_cast<float>(i) - 0.3f);
  __m256 sum = _mm256_setzero_ps();
  auto start = Clock::now();
  for (int64_t n = 0; n < iterations; ++n)
    for (__m256 input : inputs)
      sum = _mm256_add_ps(sum, routine(input));
  double seconds = secondsSince(start);
  asm volatile("" : : "x"(sum));
  return seconds / static_cast<double>(iterations * 8) * 1e9;
}
#endif

double vectorExpNs() {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2"))
    return 0;
  void *library = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return 0;
  auto routine = reinterpret_cast<VectorRoutine8>(dlsym(library, "_ZGVdN8v_expf"));
  double ns = routine ? fastest(3, [&] { return timeVectorExp(routine, 100'000); }) : 0;
  dlclose(library);
  return ns;
#else
  return 0;
#endif
}

// A walk down a column strip: at each of `rows` steps, `width` floats of a
// row (`pitch` floats apart) multiplied and added into per-lane sums that
// stay in memory, as a block of threads walking down columns runs them
// (the thread loop inside the walk, each thread's sum in its own slot).
#if defined(__x86_64__)
__attribute__((target("avx512f"))) void stripWalk512(float *sums, const float *rows, int64_t count,
                                                     int64_t pitch, int64_t width) {
  __m512 factor = _mm512_set1_ps(0.5f);
  for (int64_t r = 0; r < count; ++r) {
    const float *row = rows + r * pitch;
    for (int64_t k = 0; k + 16 <= width; k += 16)
      _mm512_storeu_ps(
          sums + k, _mm512_fmadd_ps(_mm512_loadu_ps(row + k), factor, _mm512_loadu_ps(sums + k)));
    asm volatile("" : : "r"(sums) : "memory");
  }
}

__attribute__((target("avx2,fma"))) void stripWalk256(float *sums, const float *rows, int64_t count,
                                                      int64_t pitch, int64_t width) {
  __m256 factor = _mm256_set1_ps(0.5f);
  for (int64_t r = 0; r < count; ++r) {
    const float *row = rows + r * pitch;
    for (int64_t k = 0; k + 8 <= width; k += 8)
      _mm256_storeu_ps(
          sums + k, _mm256_fmadd_ps(_mm256_loadu_ps(row + k), factor, _mm256_loadu_ps(sums + k)));
    asm volatile("" : : "r"(sums) : "memory");
  }
}
#endif

void stripWalk(float *sums, const float *rows, int64_t count, int64_t pitch, int64_t width) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f"))
    return stripWalk512(sums, rows, count, pitch, width);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return stripWalk256(sums, rows, count, pitch, width);
#endif
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t k = 0; k < width; ++k)
      sums[k] += rows[r * pitch + k] * 0.5f;
    asm volatile("" : : "r"(sums) : "memory");
  }
}

// Bytes read a second by `threads` threads each walking every 1 KB-wide
// column strip of its share of `bytes`, in rows of 16 KB.
double stripGBs(int64_t bytes, int threads) {
  constexpr int64_t kPitch = 4096, kWidth = 256; // floats
  int64_t rows = std::max<int64_t>(bytes / threads / (kPitch * 4), 1);
  std::vector<std::unique_ptr<float[]>> arrays;
  std::vector<std::vector<float>> sums(static_cast<size_t>(threads),
                                       std::vector<float>(kWidth, 0.0f));
  for (int t = 0; t < threads; ++t) {
    arrays.push_back(std::make_unique<float[]>(static_cast<size_t>(rows * kPitch)));
    std::fill_n(arrays.back().get(), rows * kPitch, 1.0f);
  }
  double seconds = fastest(2, [&] {
    std::vector<double> elapsed(static_cast<size_t>(threads));
    auto walk = [&](int t) {
      auto start = Clock::now();
      for (int64_t column = 0; column < kPitch; column += kWidth)
        stripWalk(sums[static_cast<size_t>(t)].data(),
                  arrays[static_cast<size_t>(t)].get() + column, rows, kPitch, kWidth);
      elapsed[static_cast<size_t>(t)] = secondsSince(start);
    };
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t)
      workers.emplace_back(walk, t);
    walk(0);
    for (std::thread &worker : workers)
      worker.join();
    return *std::ranges::max_element(elapsed);
  });
  return static_cast<double>(rows * kPitch * 4) * threads / seconds / 1e9;
}

// `to[i] = from[i] * scale` over n floats with the widest vectors the CPU
// has: how the code loopc generates streams arrays (memcpy moves small ones
// slower, and large ones with stores that bypass the caches).
#if defined(__x86_64__)
__attribute__((target("avx512f"))) void scaleCopy512(float *to, const float *from, int64_t n,
                                                     float scale) {
  __m512 factor = _mm512_set1_ps(scale);
  for (int64_t i = 0; i + 16 <= n; i += 16)
    _mm512_storeu_ps(to + i, _mm512_mul_ps(_mm512_loadu_ps(from + i), factor));
}

__attribute__((target("avx2"))) void scaleCopy256(float *to, const float *from, int64_t n,
                                                  float scale) {
  __m256 factor = _mm256_set1_ps(scale);
  for (int64_t i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(to + i, _mm256_mul_ps(_mm256_loadu_ps(from + i), factor));
}
#endif

void scaleCopy(float *to, const float *from, int64_t n, float scale) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f"))
    return scaleCopy512(to, from, n, scale);
  if (__builtin_cpu_supports("avx2"))
    return scaleCopy256(to, from, n, scale);
#endif
  for (int64_t i = 0; i < n; ++i)
    to[i] = from[i] * scale;
}

// Nanoseconds a load waits for a line of an array of `bytes` no prefetcher
// can guess: a chase of pointers, one a line, in a random cycle.
double chaseNs(int64_t bytes) {
  int64_t lines = std::max<int64_t>(bytes / 64, 2);
  constexpr int64_t kStride = 64 / sizeof(int64_t);
  std::vector<int64_t> next(static_cast<size_t>(lines * kStride), 0);
  std::vector<int64_t> order(static_cast<size_t>(lines));
  for (int64_t i = 0; i < lines; ++i)
    order[static_cast<size_t>(i)] = i;
  uint64_t state = 0x9e3779b97f4a7c15ull; // a fixed shuffle: the same walk every time
  for (int64_t i = lines - 1; i > 0; --i) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    std::swap(order[static_cast<size_t>(i)],
              order[static_cast<size_t>(state % static_cast<uint64_t>(i + 1))]);
  }
  for (int64_t i = 0; i < lines; ++i)
    next[static_cast<size_t>(order[static_cast<size_t>(i)] * kStride)] =
        order[static_cast<size_t>((i + 1) % lines)] * kStride;
  int64_t steps = std::min<int64_t>(lines * 2, 2'000'000);
  return fastest(3,
                 [&] {
                   int64_t at = 0;
                   auto start = Clock::now();
                   for (int64_t n = 0; n < steps; ++n)
                     at = next[static_cast<size_t>(at)];
                   double seconds = secondsSince(start);
                   asm volatile("" : : "r"(at));
                   return seconds;
                 }) /
         static_cast<double>(steps) * 1e9;
}

// Bytes read plus written a second by `threads` threads each copying its
// share of `bytes` (source and destination together) `passes` times.
// The arrays start on a cache line, as the engines' do (HostArray): a
// vector straddling two lines costs two of L1's accesses.
double copyGBs(int64_t bytes, int threads, int passes) {
  int64_t half = std::max<int64_t>(bytes / 2 / threads / 64 * 64, 64);
  int64_t floats = half / static_cast<int64_t>(sizeof(float));
  auto lineAligned = [&] {
    return std::unique_ptr<float[], void (*)(void *)>(
        static_cast<float *>(std::aligned_alloc(64, static_cast<size_t>(half))), std::free);
  };
  std::vector<std::unique_ptr<float[], void (*)(void *)>> from, to;
  for (int t = 0; t < threads; ++t) {
    from.push_back(lineAligned());
    to.push_back(lineAligned());
    std::fill_n(from.back().get(), floats, 1.0f + static_cast<float>(t));
    std::fill_n(to.back().get(), floats, 0.0f);
  }
  // Each thread times its own copies (a thread's start is not the
  // memory's time); they copy together, so the slowest one's time is the
  // run's.
  double seconds = fastest(3, [&] {
    std::vector<double> elapsed(static_cast<size_t>(threads));
    auto copy = [&](int t) {
      scaleCopy(to[t].get(), from[t].get(), floats, 1.0f); // warm
      auto start = Clock::now();
      for (int p = 0; p < passes; ++p) {
        scaleCopy(to[t].get(), from[t].get(), floats, 1.0f);
        asm volatile("" : : "r"(to[t].get()) : "memory");
      }
      elapsed[static_cast<size_t>(t)] = secondsSince(start);
    };
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t)
      workers.emplace_back(copy, t);
    copy(0);
    for (std::thread &worker : workers)
      worker.join();
    return *std::ranges::max_element(elapsed);
  });
  return 2.0 * static_cast<double>(half) * threads * passes / seconds / 1e9;
}

// The size of one cache of `level` that cpu0 uses, from sysfs ("32768K"),
// else sysconf's, else `fallback`. (glibc's sysconf may add up the L3s of
// a whole host, which a virtual machine sees but does not have.)
int64_t cacheSize(int level, int sysconfName, int64_t fallback) {
  for (int index = 0; index < 8; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream levelFile(dir + "level"), typeFile(dir + "type"), sizeFile(dir + "size");
    int found = 0;
    std::string type, size;
    if (!(levelFile >> found) || found != level || !(typeFile >> type) || type == "Instruction" ||
        !(sizeFile >> size) || size.empty())
      continue;
    int64_t scale = size.back() == 'K' ? 1024 : size.back() == 'M' ? 1024 * 1024 : 1;
    int64_t value = std::atoll(size.c_str()) * scale;
    if (value > 0)
      return value;
  }
  long size = sysconf(sysconfName);
  return size > 0 ? size : fallback;
}

// The pool's thread count, as runtime/src/CpuThreadPool.cpp chooses it.
int poolThreads() {
  if (const char *wanted = std::getenv("LOOPC_NUM_THREADS"); wanted && *wanted) {
    char *end = nullptr;
    unsigned long count = std::strtoul(wanted, &end, 10);
    if (*end == '\0' && count >= 1 && count <= 1024)
      return static_cast<int>(count);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The first value /proc/cpuinfo gives for FIELD ("model name", "cpu
// family"), or "" where it has none.
std::string cpuinfoField(const std::string &field) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string name = line.substr(0, colon);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name != field)
      continue;
    size_t value = line.find_first_not_of(" \t", colon + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

std::string cpuModelName() {
  std::string name = cpuinfoField("model name");
  return name.empty() ? "unknown CPU" : name;
}

// What tells one CPU from another for the probe's cache. A virtual
// machine's model name may hide the generation ("AMD EPYC" on two
// generations whose caches and vector units differ), which the family,
// model and stepping numbers and the cache sizes tell.
std::string cpuIdentity() {
  return cpuModelName() + "|family=" + cpuinfoField("cpu family") +
         "|model=" + cpuinfoField("model") + "|stepping=" + cpuinfoField("stepping") +
         "|l1d=" + std::to_string(cacheSize(1, _SC_LEVEL1_DCACHE_SIZE, 0)) +
         "|l2=" + std::to_string(cacheSize(2, _SC_LEVEL2_CACHE_SIZE, 0));
}

// Raised when the probe measures a figure otherwise, so that a cached probe
// of an earlier loopc is made again (2: the last-level cache's size measured).
constexpr int kProbeVersion = 2;

std::string probeCachePath() {
  if (const char *cache = std::getenv("XDG_CACHE_HOME"); cache && *cache == '/')
    return std::string(cache) + "/loopc/cpu-probe.json";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/loopc/cpu-probe.json";
  return "";
}

nlohmann::json toJson(const CpuDevice &device, const std::string &key) {
  return {{"key", key},
          {"description", device.description},
          {"threads", device.threads},
          {"vector_lanes", device.vectorLanes},
          {"vector_gflops_per_thread", device.vectorGflopsPerThread},
          {"scalar_gops_per_thread", device.scalarGopsPerThread},
          {"dependent_op_ns", device.dependentOpNs},
          {"dependent_fma_ns", device.dependentFmaNs},
          {"dependent_max_ns", device.dependentMaxNs},
          {"vector_divide_ns", device.vectorDivideNs},
          {"vector_sqrt_ns", device.vectorSqrtNs},
          {"math_lanes", device.mathLanes},
          {"vector_exp_ns", device.vectorExpNs},
          {"l1_bytes_per_thread", device.l1BytesPerThread},
          {"l2_bytes_per_thread", device.l2BytesPerThread},
          {"l1_gbs_one_thread", device.l1GBsOneThread},
          {"l2_gbs_one_thread", device.l2GBsOneThread},
          {"last_level_cache_bytes", device.lastLevelCacheBytes},
          {"cache_gbs_one_thread", device.cacheGBsOneThread},
          {"cache_gbs", device.cacheGBs},
          {"cache_latency_ns", device.cacheLatencyNs},
          {"dram_gbs_one_thread", device.dramGBsOneThread},
          {"dram_gbs", device.dramGBs},
          {"strip_gbs_one_thread", device.stripGBsOneThread},
          {"strip_gbs", device.stripGBs}};
}

std::optional<CpuDevice> fromJson(const nlohmann::json &json, const std::string &key) {
  try {
    if (json.at("key").get<std::string>() != key)
      return std::nullopt;
    CpuDevice device;
    device.name = "native";
    device.description = json.at("description").get<std::string>();
    device.threads = json.at("threads").get<int>();
    device.vectorLanes = json.at("vector_lanes").get<int>();
    device.vectorGflopsPerThread = json.at("vector_gflops_per_thread").get<double>();
    device.scalarGopsPerThread = json.at("scalar_gops_per_thread").get<double>();
    device.dependentOpNs = json.at("dependent_op_ns").get<double>();
    device.dependentFmaNs = json.at("dependent_fma_ns").get<double>();
    device.dependentMaxNs = json.at("dependent_max_ns").get<double>();
    device.vectorDivideNs = json.at("vector_divide_ns").get<double>();
    device.vectorSqrtNs = json.at("vector_sqrt_ns").get<double>();
    device.mathLanes = json.at("math_lanes").get<int>();
    device.vectorExpNs = json.at("vector_exp_ns").get<double>();
    device.l1BytesPerThread = json.at("l1_bytes_per_thread").get<int64_t>();
    device.l2BytesPerThread = json.at("l2_bytes_per_thread").get<int64_t>();
    device.l1GBsOneThread = json.at("l1_gbs_one_thread").get<double>();
    device.l2GBsOneThread = json.at("l2_gbs_one_thread").get<double>();
    device.lastLevelCacheBytes = json.at("last_level_cache_bytes").get<int64_t>();
    device.cacheGBsOneThread = json.at("cache_gbs_one_thread").get<double>();
    device.cacheGBs = json.at("cache_gbs").get<double>();
    device.cacheLatencyNs = json.at("cache_latency_ns").get<double>();
    device.dramGBsOneThread = json.at("dram_gbs_one_thread").get<double>();
    device.dramGBs = json.at("dram_gbs").get<double>();
    device.stripGBsOneThread = json.at("strip_gbs_one_thread").get<double>();
    device.stripGBs = json.at("strip_gbs").get<double>();
    return device;
  } catch (const nlohmann::json::exception &) {
    return std::nullopt; // an older or damaged file: probe again
  }
}

// A 2-thread AMD EPYC virtual machine of docs/benchmarks.md's CPU tables
// (family 25, model 17: Zen 4; AVX-512, 32 KiB of L1 data and 1 MiB of L2
// a core, 32 MiB of L3), as the probe measured it.
CpuDevice epyc2() {
  CpuDevice device;
  device.name = "epyc-2";
  device.description = "AMD EPYC (virtual machine), 2 threads, AVX-512";
  device.threads = 2;
  device.vectorLanes = 16;
  device.vectorGflopsPerThread = 117;
  device.scalarGopsPerThread = 9.5;
  device.dependentOpNs = 0.82;
  device.dependentFmaNs = 1.09;
  device.dependentMaxNs = 0.545;
  device.vectorDivideNs = 1.63;
  device.vectorSqrtNs = 2.72;
  device.mathLanes = 8;
  device.vectorExpNs = 3.56;
  device.l1BytesPerThread = 32 << 10;
  device.l2BytesPerThread = 1 << 20;
  device.lastLevelCacheBytes = 32LL << 20;
  device.l1GBsOneThread = 158;
  device.l2GBsOneThread = 108;
  device.cacheGBsOneThread = 84;
  device.cacheGBs = 193;
  device.cacheLatencyNs = 18;
  device.dramGBsOneThread = 25.3;
  device.dramGBs = 35;
  device.stripGBsOneThread = 7.2;
  device.stripGBs = 13.8;
  return device;
}

// A 2-thread Intel Xeon virtual machine of docs/benchmarks.md's CPU tables
// (AVX-512 with two FMA pipes, 48 KiB of L1 data and 2 MiB of L2 a core;
// told its host's 480 MiB last-level cache, of which it holds 32 MiB): the
// figures its probe measured.
CpuDevice xeon2() {
  CpuDevice device;
  device.name = "xeon-2";
  device.description = "Intel Xeon (virtual machine), 2 threads, AVX-512";
  device.threads = 2;
  device.vectorLanes = 16;
  device.vectorGflopsPerThread = 238;
  device.scalarGopsPerThread = 9.1;
  device.dependentOpNs = 0.49;
  device.dependentFmaNs = 0.99;
  device.dependentMaxNs = 0.99;
  device.vectorDivideNs = 2.65;
  device.vectorSqrtNs = 3.19;
  device.mathLanes = 8;
  device.vectorExpNs = 3.02;
  device.l1BytesPerThread = 48 << 10;
  device.l2BytesPerThread = 2 << 20;
  device.lastLevelCacheBytes = 32LL << 20;
  device.l1GBsOneThread = 400;
  device.l2GBsOneThread = 96;
  device.cacheGBsOneThread = 29;
  device.cacheGBs = 59;
  device.cacheLatencyNs = 46;
  device.dramGBsOneThread = 13;
  device.dramGBs = 24.7;
  device.stripGBsOneThread = 7.4;
  device.stripGBs = 15.6;
  return device;
}

} // namespace

CpuDevice probeCpu() {
  CpuDevice device;
  device.name = "native";
  device.threads = poolThreads();
  std::string vectors = "SSE";
  auto flopsOf = [](double seconds, int64_t iterations, int lanes) {
    return static_cast<double>(iterations) * 12 * lanes * 2 / seconds / 1e9;
  };
  constexpr int64_t kFmaIterations = 4'000'000;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    device.vectorLanes = 16, vectors = "AVX-512";
    device.vectorGflopsPerThread =
        flopsOf(fastest(3, [] { return timeFma512(kFmaIterations); }), kFmaIterations, 16);
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    device.vectorLanes = 8, vectors = "AVX2";
    device.vectorGflopsPerThread =
        flopsOf(fastest(3, [] { return timeFma256(kFmaIterations); }), kFmaIterations, 8);
  }
#endif
  constexpr int64_t kScalarIterations = 20'000'000;
  double independent = fastest(3, [] { return timeScalarOps(kScalarIterations / 8, false); });
  device.scalarGopsPerThread = static_cast<double>(kScalarIterations) * 2 / independent / 1e9;
  if (device.vectorGflopsPerThread == 0) // no vector probe: 4 lanes of scalar rate
    device.vectorGflopsPerThread = device.scalarGopsPerThread * 4;
  double chain = fastest(3, [] { return timeScalarOps(kScalarIterations, true); });
  device.dependentOpNs = chain / static_cast<double>(kScalarIterations) * 1e9;
  device.dependentFmaNs = device.dependentOpNs;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("fma"))
    device.dependentFmaNs = fastest(3, [] { return timeFmaChain(kScalarIterations); }) /
                            static_cast<double>(kScalarIterations) * 1e9;
#endif
  device.dependentMaxNs = fastest(3, [] { return timeMaxChain(kScalarIterations); }) /
                          static_cast<double>(kScalarIterations) * 1e9;
  // Without a vector divider probe: a division or root of each lane at
  // the rate of a few scalar operations.
  device.vectorDivideNs = device.vectorSqrtNs = device.vectorLanes * 4 / device.scalarGopsPerThread;
#if defined(__x86_64__)
  constexpr int64_t kDividerIterations = 200'000;
  auto dividerNs = [&](auto time, bool roots) {
    return fastest(3, [&] { return time(kDividerIterations, roots); }) /
           static_cast<double>(kDividerIterations * 12) * 1e9;
  };
  if (device.vectorLanes == 16) {
    device.vectorDivideNs = dividerNs(timeDivider512, false);
    device.vectorSqrtNs = dividerNs(timeDivider512, true);
  } else if (device.vectorLanes == 8) {
    device.vectorDivideNs = dividerNs(timeDivider256, false);
    device.vectorSqrtNs = dividerNs(timeDivider256, true);
  }
#endif

  device.l1BytesPerThread = cacheSize(1, _SC_LEVEL1_DCACHE_SIZE, 32 << 10);
  device.l2BytesPerThread = cacheSize(2, _SC_LEVEL2_CACHE_SIZE, 1 << 20);
  device.lastLevelCacheBytes =
      cacheSize(3, _SC_LEVEL3_CACHE_SIZE, device.l2BytesPerThread * device.threads);
  int64_t inCache = std::min<int64_t>(device.lastLevelCacheBytes / 2, 8 << 20);
  int64_t beyondCache =
      std::clamp<int64_t>(device.lastLevelCacheBytes * 8, 128LL << 20, 512LL << 20);
  device.l1GBsOneThread = copyGBs(device.l1BytesPerThread / 2, 1, 2000);
  device.l2GBsOneThread = copyGBs(device.l2BytesPerThread / 2, 1, 200);
  device.cacheGBsOneThread = copyGBs(inCache, 1, 20);
  device.cacheLatencyNs = chaseNs(inCache);
  device.cacheGBs = copyGBs(inCache, device.threads, 20);
  device.dramGBsOneThread = copyGBs(beyondCache, 1, 1);
  device.dramGBs = copyGBs(beyondCache, device.threads, 1);
  device.lastLevelCacheBytes = heldByLastLevelCache(
      device.lastLevelCacheBytes, inCache, std::sqrt(device.cacheGBs * device.dramGBs),
      [&](int64_t bytes) { return copyGBs(bytes, device.threads, 2); });
  // Without libmvec, LLVM calls the scalar routine lane by lane: about
  // twenty operations each.
  device.mathLanes = 4;
  device.vectorExpNs = 4 * 20 / device.scalarGopsPerThread;
#if defined(__x86_64__)
  if (double ns = vectorExpNs(); ns > 0)
    device.mathLanes = 8, device.vectorExpNs = ns;
#endif
  device.stripGBsOneThread = stripGBs(beyondCache, 1);
  device.stripGBs = stripGBs(beyondCache, device.threads);

  std::ostringstream description;
  description << cpuModelName() << ", " << device.threads << " thread"
              << (device.threads == 1 ? "" : "s") << ", " << vectors;
  device.description = description.str();
  return device;
}

int64_t heldByLastLevelCache(int64_t reported, int64_t inCache, double fasterThan,
                             const std::function<double(int64_t)> &copyGBs) {
  int64_t fast = std::min(inCache, reported);
  for (int64_t bytes = fast * 2; bytes <= reported; bytes *= 2) {
    // Half the last fast size: copies made warm run at the cache's rate up
    // to a size at which a kernel's arrays, read once a run among other
    // data, already come partly from memory (on the Xeon guest, copies of
    // 64 MiB at 55 GB/s, a dot product over 64 MiB at 30, memory's rate 25).
    if (copyGBs(bytes) < fasterThan)
      return std::max(fast / 2, std::min(inCache, reported));
    fast = bytes;
  }
  return reported;
}

double CpuDevice::bandwidthFor(double bytes, int threadCount) const {
  double perThread = bytes / std::max(threadCount, 1);
  if (perThread <= static_cast<double>(l1BytesPerThread))
    return l1GBsOneThread * threadCount;
  if (perThread <= static_cast<double>(l2BytesPerThread))
    return l2GBsOneThread * threadCount;
  if (bytes <= static_cast<double>(lastLevelCacheBytes))
    return threadCount == 1 ? cacheGBsOneThread : cacheGBs;
  return threadCount == 1 ? dramGBsOneThread : dramGBs;
}

const std::vector<CpuDevice> &cpuDevices() {
  static const std::vector<CpuDevice> table = {epyc2(), xeon2()};
  return table;
}

Expected<CpuDevice> findCpuDevice(const std::string &name) {
  std::string lower = name;
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const CpuDevice &device : cpuDevices())
    if (device.name == lower)
      return device;
  if (lower != "native") {
    std::string names = "native";
    for (const CpuDevice &device : cpuDevices())
      names += ", " + device.name;
    return std::unexpected(makeError("unknown CPU model '" + name + "' (known: " + names + ")"));
  }
  // This machine: the cached probe when it was made for this CPU and
  // thread count, else a new one, kept for next time (a cache that cannot
  // be written costs only the probe's time).
  std::string key = cpuIdentity() + "|threads=" + std::to_string(poolThreads()) +
                    "|probe=" + std::to_string(kProbeVersion);
  std::string path = probeCachePath();
  if (!path.empty()) {
    std::ifstream cached(path);
    nlohmann::json json = nlohmann::json::parse(cached, nullptr, /*allow_exceptions=*/false);
    if (cached && !json.is_discarded())
      if (std::optional<CpuDevice> device = fromJson(json, key))
        return *device;
  }
  CpuDevice device = probeCpu();
  if (!path.empty()) {
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
    (void)writeFileAtomically(path, toJson(device, key).dump(2) + "\n", "'" + path + "'");
  }
  return device;
}

} // namespace loopc::perf
