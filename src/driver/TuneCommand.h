// `loopc tune FILE [--kernel K] [--set ...] [--device D] [--repeat N]
// [--tuning-cache F]`: searches the optimizations' choices (which to leave
// out, and register_tile, stage_length, shared_kib, stage_min_reuse) for the
// fastest run of a kernel at these sizes on this device, and keeps the best in
// the tuning cache (Tuning.h), where `loopc run/bench --tuned` finds it; with
// --write-schedule, also in the kernel's source as its `@schedule`.
//
// The search is coordinate descent from the defaults (a kernel's @schedule
// over them, where it has one): each choice in turn
// takes each of its values while the others stay, and a value is kept when it
// runs at least 5% faster than the best so far; rounds repeat until none
// changes (at most three). A value that compiles to the same code as one
// already timed is not timed again, and every candidate's outputs must match
// the defaults' (a mismatch is reported and the candidate dropped: it is a
// compiler bug), so the search is reproducible up to timing noise.
#pragma once

#include "driver/Session.h"
#include "driver/Tuning.h"

#include <CLI/CLI.hpp>

#include <ostream>

namespace loopc::driver {

void addTuneCommand(CLI::App &app);

// `loopc tune`'s search for `run` (`repeat` timed runs per candidate), its
// progress printed to `out`; the best choice is kept in the tuning cache
// `target` names (--tuning-cache, with its file), and returned. Shared with
// Python's Kernel.tune.
Expected<TunedChoice> tunePreparedRun(const RunTargetOptions &target, int repeat, PreparedRun &run,
                                      std::ostream &out);

// Writes `choices` into `kernel`'s source as its `@schedule`: in place of the
// one it has, else on a line of its own before the kernel; where `choices`
// are the defaults, the kernel loses the one it has. Only into `mainFile`
// (a kernel of an imported file is an error saying what to write there);
// the file is rewritten whole or not at all. Says what it did on `out`.
Status writeSchedule(const std::string &mainFile, const Session &session, const KernelDecl &kernel,
                     const passes::PassChoices &choices, std::ostream &out);

} // namespace loopc::driver
