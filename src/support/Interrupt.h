// A request to stop the run in progress, made by Ctrl-C in the REPL: its
// SIGINT handler sets it, the engines read it between pieces of work (the
// interpreter at every loop iteration; the CPU runtime's thread pool has a
// flag of its own, loopc_cpu_cancel_launches) and end the run with an error,
// and the REPL clears it before the next input.
#pragma once

namespace loopc {

// Async-signal-safe.
void requestInterrupt();
bool interruptRequested();
// Clears the request; true when it was made.
bool takeInterrupt();

// The error message of a run stopped by it.
inline constexpr const char *kInterruptedMessage = "interrupted (Ctrl-C)";

} // namespace loopc
