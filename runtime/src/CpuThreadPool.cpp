// The CPU thread pool of loopc/generated.h: persistent workers, one per
// core, that sleep between launches; the launching thread works too. Launches
// are serialized: a kernel never launches another one.
#include "loopc/generated.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <vector>

namespace {

class ThreadPool {
public:
  explicit ThreadPool(unsigned threads) {
    for (unsigned i = 1; i < threads; ++i)
      workers_.emplace_back([this] { workerLoop(); });
  }

  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread &worker : workers_)
      worker.join();
  }

  unsigned threadCount() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Held around fork() (see pool()).
  void lockLaunches() { launchMutex_.lock(); }
  void unlockLaunches() { launchMutex_.unlock(); }

  void run(loopc_cpu_kernel kernel, void **buffers, void *scalars, int64_t blockCount) {
    std::lock_guard launchLock(launchMutex_);
    // Several chunks per thread balance uneven blocks without paying an
    // atomic operation per block.
    int64_t chunk = std::max<int64_t>(1, blockCount / (int64_t(threadCount()) * 8));
    {
      std::lock_guard lock(mutex_);
      job_ = Job{kernel, buffers, scalars, blockCount, chunk};
      next_.store(0);
      busyWorkers_ = static_cast<unsigned>(workers_.size());
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return busyWorkers_ == 0; });
  }

private:
  struct Job {
    loopc_cpu_kernel kernel = nullptr;
    void **buffers = nullptr;
    void *scalars = nullptr;
    int64_t blockCount = 0;
    int64_t chunk = 1;
  };

  void work() {
    for (;;) {
      int64_t begin = next_.fetch_add(job_.chunk);
      if (begin >= job_.blockCount)
        return;
      job_.kernel(job_.buffers, job_.scalars, begin, std::min(begin + job_.chunk, job_.blockCount));
    }
  }

  void workerLoop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_)
          return;
        seen = generation_;
      }
      work();
      std::lock_guard lock(mutex_);
      if (--busyWorkers_ == 0)
        done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex launchMutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  Job job_;
  std::atomic<int64_t> next_{0};
  unsigned busyWorkers_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
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
  static std::once_flag atfork;
  std::call_once(atfork,
                 [] { pthread_atfork(prepareFork, resumeParentAfterFork, resumeChildAfterFork); });
  std::lock_guard lock(poolMutex);
  if (!instance)
    instance = std::make_unique<ThreadPool>(threadsWanted());
  return *instance;
}

} // namespace

void loopc_cpu_parallel_for(loopc_cpu_kernel kernel, void **buffers, void *scalars,
                            int64_t unit_count) {
  if (unit_count <= 0)
    return;
  if (unit_count == 1) {
    kernel(buffers, scalars, 0, 1);
    return;
  }
  pool().run(kernel, buffers, scalars, unit_count);
}

unsigned loopc_cpu_worker_count(void) { return pool().threadCount(); }

void loopc_cpu_call_lock(void) { callMutex.lock(); }
void loopc_cpu_call_unlock(void) { callMutex.unlock(); }
