// A kernel's schedule as its source writes it: `@schedule(register_tile=8,
// skip=stage_shared)` before the kernel. Sema checks its shape, the driver
// checks each name and value against the passes' registry, the lowering
// carries it into the kernel's IR function, and the pipeline applies it
// (docs/schedules.md).
#pragma once

#include "support/Diagnostics.h"

#include <string>
#include <vector>

namespace loopc {

// One `name=value` of a schedule: a pass parameter and its value, or
// `skip=PASS`.
struct ScheduleChoice {
  std::string name;
  std::string value;
  SourceRange source;      // the whole `name=value`
  SourceRange valueSource; // the value

  static constexpr const char *kSkip = "skip";
};

using Schedule = std::vector<ScheduleChoice>;

// `register_tile=8 skip=stage_shared`: the schedule as the command line's
// words would give it.
std::string describeSchedule(const Schedule &schedule);

} // namespace loopc
