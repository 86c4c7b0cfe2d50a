// The CPU thread pool of loopc/generated.h: persistent workers, one per core
// but the launching thread's, which works too. Between launches a worker
// spins for a while (kSpinBeforeSleep) before it sleeps, so a launch that
// follows another within that time hands its work over with a few stores to
// memory, not a system call per worker; a launch offers work only to the
// workers it has work for, and takes back the offers not yet taken when it
// has done the work itself. A launch measured to be shorter than a hand-over
// (kInlineBelow) runs in the calling thread. Launches on the pool are
// serialized: a kernel never launches another one.
#include "loopc/generated.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace {

// Tells the core that this thread is spinning: on x86 `pause` gives the
// sibling hyperthread the core's resources and keeps the loop from flooding
// the memory system with speculative loads.
inline void relaxWhileSpinning() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// How long a waiting thread spins before it sleeps. A time step of a host
// loop between two launches (a scalar update, a short serial reduction) is a
// few microseconds; waking a sleeping worker costs as much on a 2-core
// machine (a launch of a 64-point parfor with sleeping workers took several
// microseconds: docs/benchmarks.md, CPU history). Past this, the wait is
// long enough that a wake-up is a small part of it, and a spinning worker
// would only take a core from other programs.
constexpr std::chrono::microseconds kSpinBeforeSleep{100};

// Spins until `ready()`, then sleeps on `flag` until `ready()`:
// `flag.wait(old)` returns once flag no longer holds `old`. `sleeping` is
// set while this thread may sleep, so that whoever makes `ready()` true
// calls flag.notify_*() only when someone may be asleep (see wake).
template <typename Value, typename Ready>
void awaitReady(std::atomic<Value> &flag, std::atomic<bool> &sleeping, Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  for (;;) {
    // A clock read costs about as much as the 64 checks between two reads.
    for (int spin = 0; spin < 64; ++spin) {
      if (ready())
        return;
      relaxWhileSpinning();
    }
    if (std::chrono::steady_clock::now() >= deadline)
      break;
  }
  // Sequentially consistent with wake(): either the waker sees `sleeping`
  // and notifies, or this thread sees the waker's store in `ready()`.
  sleeping.store(true);
  for (Value seen = flag.load(); !ready(); seen = flag.load())
    flag.wait(seen);
  sleeping.store(false, std::memory_order_relaxed);
}

// The waker's side of awaitReady, after it stored what makes `ready()` true
// (sequentially consistent, before this load).
template <typename Value> void wake(std::atomic<Value> &flag, const std::atomic<bool> &sleeping) {
  if (sleeping.load())
    flag.notify_all();
}

using Picoseconds = std::chrono::duration<int64_t, std::pico>;

// A launch whose work takes less than this in one thread runs there alone
// (and generated code runs it without calling here: generated.h).
// On a 2-core machine, handing a launch to a spinning worker and waiting for
// it cost about 1 us more than the work (a parfor adding 1 to 32000 floats
// ran slower on both cores than alone, one adding 1 to 4000 floats slower
// still), so two threads gain from about twice that on.
constexpr Picoseconds kInlineBelow{LOOPC_CPU_INLINE_BELOW_PICOSECONDS};
// Before a kernel's first launch alone, the time its units took in a
// parallel launch overstates their time alone, about tenfold for the 4000
// floats (the blocks' cache lines move between the cores, chunks are taken
// by atomic additions): a launch this many times kInlineBelow is tried alone
// once, which costs at most a few microseconds more if it is not faster.
constexpr int64_t kProbeAloneFactor = 8;
// One launch alone in this many is timed: two clock reads (slow on a
// virtual machine) made 1-D Jacobi's launches of 4000 points slower on two
// threads than on one when every launch was timed, and still cost a few
// percent of its time when one in 8 was (docs/benchmarks.md, CPU history).
// A kernel whose units grow cheaper or dearer is seen again within this
// many launches; a launch's unit count is read every time.
constexpr int64_t kTimeAloneEvery = 64;

// The time each unit of a launch took, measured by the thread that ran it.
class UnitTimer {
public:
  UnitTimer() : start_(std::chrono::steady_clock::now()) {}

  // The time since construction per unit of `units`: never 0 (unknown).
  int64_t perUnit(int64_t units) const {
    auto elapsed =
        std::chrono::duration_cast<Picoseconds>(std::chrono::steady_clock::now() - start_);
    return std::max<int64_t>(1, elapsed.count() / units);
  }

private:
  std::chrono::steady_clock::time_point start_;
};

// A kernel's loopc_cpu_kernel_cost, which launches of it may read and write
// from several threads at once (programs run by several threads).
class KernelCost {
public:
  explicit KernelCost(loopc_cpu_kernel_cost &cost)
      : alone_(cost.alone_picoseconds_per_unit), shared_(cost.shared_picoseconds_per_unit),
        untilTimed_(cost.alone_launches_until_timed) {}

  // Whether a launch of `units` runs in the calling thread alone: when it
  // was measured to take less than kInlineBelow so; else, before any such
  // measurement, when its share of a parallel launch measured less than
  // kProbeAloneFactor times that.
  bool runsAlone(int64_t units) const {
    if (int64_t alone = alone_.load(std::memory_order_relaxed))
      return alone <= kInlineBelow.count() / units;
    int64_t shared = shared_.load(std::memory_order_relaxed);
    return shared > 0 && shared <= (kProbeAloneFactor * kInlineBelow).count() / units;
  }

  // Whether to time this launch alone: the first, then one in
  // kTimeAloneEvery. (Launches from several threads at once may count one
  // twice: a launch timed a little earlier or later.)
  bool timeAloneLaunch() {
    int64_t until = untilTimed_.load(std::memory_order_relaxed);
    if (until > 0 && alone_.load(std::memory_order_relaxed) > 0) {
      untilTimed_.store(until - 1, std::memory_order_relaxed);
      return false;
    }
    untilTimed_.store(kTimeAloneEvery - 1, std::memory_order_relaxed);
    return true;
  }

  void measuredAlone(int64_t perUnit) { alone_.store(perUnit, std::memory_order_relaxed); }

  // A launch of one unit runs alone, untimed: the next kTimeAloneEvery - 1
  // may too.
  void allowAloneLaunches() { untilTimed_.store(kTimeAloneEvery - 1, std::memory_order_relaxed); }

  // A parallel launch whose units took less than the last launch alone
  // says that measurement is out of date (the kernel's work shrank).
  void measuredShared(int64_t perUnit) {
    shared_.store(perUnit, std::memory_order_relaxed);
    if (perUnit < alone_.load(std::memory_order_relaxed))
      alone_.store(perUnit, std::memory_order_relaxed);
  }

private:
  std::atomic_ref<int64_t> alone_, shared_, untilTimed_;
};

// loopc_cpu_cancel_launches: while set, launches run nothing more.
std::atomic<bool> launchesCancelled{false};

class ThreadPool {
public:
  explicit ThreadPool(unsigned threads) : workers_(threads - 1) {
    for (Worker &worker : workers_)
      worker.thread = std::thread([this, &worker] { workerLoop(worker); });
  }

  ~ThreadPool() {
    for (Worker &worker : workers_) {
      worker.offer.store(Offer::Stop);
      worker.offer.notify_all();
    }
    for (Worker &worker : workers_)
      worker.thread.join();
  }

  unsigned threadCount() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Held around fork() (see pool()).
  void lockLaunches() { launchMutex_.lock(); }
  void unlockLaunches() { launchMutex_.unlock(); }

  void run(loopc_cpu_kernel kernel, void **buffers, void *scalars, int64_t unitCount,
           loopc_cpu_kernel_cost *cost) {
    std::lock_guard launchLock(launchMutex_);
    // Several chunks per thread balance uneven units without paying an
    // atomic operation per unit.
    int64_t chunk = std::max<int64_t>(1, unitCount / (int64_t(threadCount()) * 8));
    int64_t chunks = (unitCount + chunk - 1) / chunk;
    // The launching thread takes a chunk too: only the others need helpers.
    auto helpers = static_cast<unsigned>(std::min<int64_t>(chunks - 1, workers_.size()));
    job_ = Job{kernel, buffers, scalars, unitCount, chunk};
    next_.store(0, std::memory_order_relaxed);
    busyHelpers_.store(helpers, std::memory_order_relaxed);
    for (unsigned i = 0; i < helpers; ++i) {
      workers_[i].offer.store(Offer::Made); // publishes job_ to the worker
      wake(workers_[i].offer, workers_[i].sleeping);
    }
    UnitTimer timer;
    int64_t unitsDone = work();
    if (cost && unitsDone > 0)
      KernelCost(*cost).measuredShared(timer.perUnit(unitsDone));
    // A helper still asleep (or not yet scheduled) would find nothing left
    // to do: the launch need not wait for it to wake.
    for (unsigned i = 0; i < helpers; ++i) {
      Offer made = Offer::Made;
      if (workers_[i].offer.compare_exchange_strong(made, Offer::None))
        busyHelpers_.fetch_sub(1);
    }
    awaitReady(busyHelpers_, launcherSleeping_, [this] { return busyHelpers_.load() == 0; });
  }

private:
  struct Job {
    loopc_cpu_kernel kernel = nullptr;
    void **buffers = nullptr;
    void *scalars = nullptr;
    int64_t unitCount = 0;
    int64_t chunk = 1;
  };

  // A worker's state, which the launcher and the worker change: None ->
  // Made (the launcher offers the current job) -> Taken (the worker works
  // on it) -> None (done); or Made -> None (the launcher took the offer
  // back); Stop ends the worker.
  enum class Offer : uint32_t { None, Made, Taken, Stop };

  // A cache line each: a worker spins on its own offer, which the launcher
  // writes only to offer it a job or take the offer back.
  struct alignas(64) Worker {
    std::atomic<Offer> offer{Offer::None};
    std::atomic<bool> sleeping{false};
    std::thread thread;
  };

  // Runs chunks of the job until none is left (or the launches are
  // cancelled); returns the units run.
  int64_t work() {
    int64_t units = 0;
    for (;;) {
      int64_t begin = next_.fetch_add(job_.chunk, std::memory_order_relaxed);
      if (begin >= job_.unitCount || launchesCancelled.load(std::memory_order_relaxed))
        return units;
      int64_t end = std::min(begin + job_.chunk, job_.unitCount);
      job_.kernel(job_.buffers, job_.scalars, begin, end);
      units += end - begin;
    }
  }

  void workerLoop(Worker &self) {
    for (;;) {
      awaitReady(self.offer, self.sleeping, [&] { return self.offer.load() != Offer::None; });
      Offer made = Offer::Made;
      if (!self.offer.compare_exchange_strong(made, Offer::Taken)) {
        if (made == Offer::Stop)
          return;
        continue; // taken back before this worker came
      }
      work();
      self.offer.store(Offer::None);
      // The launcher returns, and may write the next job, once every helper
      // is done with this one.
      if (busyHelpers_.fetch_sub(1) == 1)
        wake(busyHelpers_, launcherSleeping_);
    }
  }

  std::vector<Worker> workers_;
  std::mutex launchMutex_;
  Job job_;
  alignas(64) std::atomic<int64_t> next_{0};
  alignas(64) std::atomic<uint32_t> busyHelpers_{0};
  std::atomic<bool> launcherSleeping_{false};
};

// The pool, started by the first launch. A fork()ed child has only the
// forking thread: the parent's workers are gone, so the child drops the pool
// it inherited (leaked: its threads cannot be joined) and starts a fresh one
// on its first launch. Around fork, the call lock and the pool's launch lock
// are held, so the child never inherits them locked by a thread it lacks
// (the forking thread waits for a call running in another thread to end).
std::mutex callMutex;
std::mutex poolMutex; // guards `instance`
std::unique_ptr<ThreadPool> instance;
// `instance`, read without the lock by every launch once it is set.
std::atomic<ThreadPool *> started{nullptr};

void prepareFork() {
  callMutex.lock();
  poolMutex.lock();
  if (instance)
    instance->lockLaunches();
}

void resumeParentAfterFork() {
  if (instance)
    instance->unlockLaunches();
  poolMutex.unlock();
  callMutex.unlock();
}

void resumeChildAfterFork() {
  started.store(nullptr);
  (void)instance.release();
  poolMutex.unlock();
  callMutex.unlock();
}

// One thread per core, or LOOPC_NUM_THREADS of them (as OMP_NUM_THREADS:
// to leave cores to other work, or to time one core alone).
unsigned threadsWanted() {
  if (const char *wanted = std::getenv("LOOPC_NUM_THREADS"); wanted && *wanted) {
    char *end = nullptr;
    unsigned long count = std::strtoul(wanted, &end, 10);
    if (*end == '\0' && count >= 1 && count <= 1024)
      return static_cast<unsigned>(count);
    std::fprintf(stderr,
                 "loopc: LOOPC_NUM_THREADS='%s' is not a thread count from 1 to 1024; using one "
                 "thread per core\n",
                 wanted);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool &pool() {
  if (ThreadPool *running = started.load(std::memory_order_acquire))
    return *running;
  static std::once_flag atfork;
  std::call_once(atfork,
                 [] { pthread_atfork(prepareFork, resumeParentAfterFork, resumeChildAfterFork); });
  std::lock_guard lock(poolMutex);
  if (!instance) {
    instance = std::make_unique<ThreadPool>(threadsWanted());
    started.store(instance.get(), std::memory_order_release);
  }
  return *instance;
}

} // namespace

void loopc_cpu_launch_kernel(loopc_cpu_kernel kernel, void **buffers, void *scalars,
                             int64_t unit_count, loopc_cpu_kernel_cost *cost) {
  if (unit_count <= 0 || launchesCancelled.load(std::memory_order_relaxed))
    return;
  if (unit_count == 1) {
    kernel(buffers, scalars, 0, 1);
    // Generated code may run the next ones of this kernel itself, coming
    // back here one time in kTimeAloneEvery (where a Ctrl-C stops them).
    if (cost)
      KernelCost(*cost).allowAloneLaunches();
    return;
  }
  ThreadPool &threads = pool();
  if (threads.threadCount() == 1) {
    kernel(buffers, scalars, 0, unit_count);
    return;
  }
  if (cost && KernelCost(*cost).runsAlone(unit_count)) {
    if (!KernelCost(*cost).timeAloneLaunch()) {
      kernel(buffers, scalars, 0, unit_count);
      return;
    }
    UnitTimer timer;
    kernel(buffers, scalars, 0, unit_count);
    KernelCost(*cost).measuredAlone(timer.perUnit(unit_count));
    return;
  }
  threads.run(kernel, buffers, scalars, unit_count, cost);
}

unsigned loopc_cpu_worker_count(void) { return pool().threadCount(); }

void loopc_cpu_cancel_launches(int cancel) {
  launchesCancelled.store(cancel != 0, std::memory_order_relaxed);
}

void loopc_cpu_call_lock(void) { callMutex.lock(); }
void loopc_cpu_call_unlock(void) { callMutex.unlock(); }
