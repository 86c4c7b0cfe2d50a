// The interrupt request (see Interrupt.h).
#include "support/Interrupt.h"

#include <atomic>

namespace loopc {

namespace {

std::atomic<bool> requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

} // namespace

void requestInterrupt() { requested.store(true, std::memory_order_relaxed); }

bool interruptRequested() { return requested.load(std::memory_order_relaxed); }

bool takeInterrupt() { return requested.exchange(false, std::memory_order_relaxed); }

} // namespace loopc
