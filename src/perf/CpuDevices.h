// The CPUs the performance model knows: what one core computes (vector and
// scalar floating-point rates, the latency of a dependent operation), what
// the caches and memory move for one thread and for all of them, and what
// a launch on loopc's thread pool costs.
//
// The figures of `native` are this machine's, measured by a probe of a few
// tenths of a second (independent FMA chains on the widest vectors the CPU
// has, a dependent chain, copies of arrays that fit the last-level cache and
// of arrays that do not, on one thread and on every thread of the pool) and
// kept in the user's cache directory, so that only the first use pays for
// it. The named ones are machines the model was calibrated on, with the
// figures the probe measured there (tests/cpu_perf_test.cpp).
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace loopc::perf {

struct CpuDevice {
  std::string name;        // what --device-model takes: "native", "epyc-2", "xeon-2"
  std::string description; // "AMD EPYC, 2 threads, AVX-512"
  int threads = 1;         // the thread pool's (LOOPC_NUM_THREADS, else one per core)
  int vectorLanes = 4;     // f32 lanes of the widest vector the code generator uses
  // One core: f32 flops a second with independent vector FMAs (an FMA is
  // 2), independent scalar floating-point operations a second, and the
  // nanoseconds between two dependent ones (a recurrence's step).
  double vectorGflopsPerThread = 0;
  double scalarGopsPerThread = 0;
  double dependentOpNs = 0;
  // Nanoseconds between two dependent multiply-adds (an accumulation LLVM
  // contracts into FMAs: `s = s + a * b`) and two dependent maxima (a
  // running maximum, `m = m > v ? m : v`).
  double dependentFmaNs = 0;
  double dependentMaxNs = 0;
  // Nanoseconds a core takes for each of many independent divisions, and
  // square roots, of the widest vectors: the divider is a unit of its own,
  // far slower than the FMA pipes.
  double vectorDivideNs = 0;
  double vectorSqrtNs = 0;
  // Vectorized loops call glibc's vector math library (libmvec) for exp,
  // log, sin, cos, tanh and pow, `mathLanes` f32 lanes a call (its AVX2
  // routines where the CPU has AVX2, whatever wider vectors it has):
  // nanoseconds a call of its exp takes, one call after another.
  int mathLanes = 4;
  double vectorExpNs = 0;
  int64_t l1BytesPerThread = 0, l2BytesPerThread = 0;
  // What the last-level cache holds for the threads: the size the CPU
  // reports, or less where copies that large already ran near memory's rate
  // (a virtual machine is told its host's whole cache).
  int64_t lastLevelCacheBytes = 0;
  // Bytes read plus written a second by one thread copying arrays that fit
  // its L1 and its L2 (each thread has its own); by copies whose arrays fit
  // the last-level cache, and by copies of arrays far larger, on one thread
  // and on all of them.
  double l1GBsOneThread = 0, l2GBsOneThread = 0;
  double cacheGBsOneThread = 0, cacheGBs = 0;
  // Nanoseconds a load from the last-level cache waits when no prefetcher
  // brought the line ahead (the first lines of a walk that starts anew).
  double cacheLatencyNs = 0;
  double dramGBsOneThread = 0, dramGBs = 0;
  // Bytes read a second by walks down column strips of arrays far larger
  // than the last-level cache, on one thread and on all of them: each step
  // reads 1 KB of a row (a block's 256 lanes), adds it into per-lane sums
  // kept in memory, and moves a row (16 KB) down, as a block whose threads
  // each walk a column runs. Every step lands on another page, where the
  // prefetchers stop, so such a walk streams far below `dramGBs`.
  double stripGBsOneThread = 0, stripGBs = 0;
  // The thread pool (runtime/src/CpuThreadPool.cpp): a launch run in the
  // calling thread, and one handed to the other threads, cost this many
  // microseconds besides their work; a launch whose work takes less than
  // `inlineBelowMicroseconds` alone runs alone.
  double launchAloneMicroseconds = 0.003;
  double launchSharedMicroseconds = 1.0;
  double inlineBelowMicroseconds = 2.0;

  // What `threads` threads moving `bytes` together achieve: the level that
  // holds them (L1 and L2 per thread, the last-level cache, DRAM).
  double bandwidthFor(double bytes, int threads) const;
};

// The named CPUs, calibrated: "epyc-2" (a 2-thread AMD EPYC virtual
// machine of docs/benchmarks.md's CPU tables, a Zen 4) and "xeon-2" (a
// 2-thread Intel Xeon virtual machine of the same tables, AVX-512).
const std::vector<CpuDevice> &cpuDevices();

// `name`: "native" (this machine, probed once and cached), or a named CPU
// (case-insensitive); an error lists the names.
Expected<CpuDevice> findCpuDevice(const std::string &name);

// Measures this machine (what `native` is when nothing is cached).
CpuDevice probeCpu();

// What the last-level cache holds for a machine's threads: the `reported`
// size when copies of it by all threads (`copyGBs` of its bytes) still run
// faster than `fasterThan` GB/s, a rate between the cache's and memory's;
// else half the largest working set, doubling from `inCache`, that does. A
// virtual machine is told its host's whole cache, shared with every other
// guest: 480 MiB on a 2-thread guest of a large Xeon, whose copies ran at
// memory's rate from 128 MiB (it holds 32 MiB).
int64_t heldByLastLevelCache(int64_t reported, int64_t inCache, double fasterThan,
                             const std::function<double(int64_t)> &copyGBs);

} // namespace loopc::perf
