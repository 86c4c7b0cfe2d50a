// A kernel's schedule as its source writes it: `@schedule(register_tile=8,
// skip=stage_shared)` before the kernel. Sema checks it (each name and value
// against the passes' registry through the check the driver gives it), the
// lowering carries it into the kernel's IR function, and the pipeline applies
// it (docs/schedules.md).
#pragma once

#include "support/Diagnostics.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace loopc {

// One `name=value` of a schedule: a pass parameter and its value,
// `skip=PASS`, or an array's staging.
struct ScheduleChoice {
  std::string name;
  std::string value;
  SourceRange source;      // the whole `name=value`
  SourceRange valueSource; // the value

  static constexpr const char *kSkip = "skip";
  // `stage=A`, `no_stage=B`: an `in` array staged in shared memory wherever
  // it can be, or never.
  static constexpr const char *kStage = "stage";
  static constexpr const char *kNoStage = "no_stage";
  // Whether the choice names one of several values (skip, stage, no_stage):
  // such a name may be repeated with other values.
  bool listsValues() const { return name == kSkip || name == kStage || name == kNoStage; }
  bool namesArray() const { return name == kStage || name == kNoStage; }
};

using Schedule = std::vector<ScheduleChoice>;

// Why a choice names nothing the passes know: the message of a located error
// and whether it is about the value (else the name).
struct ScheduleError {
  std::string message;
  bool atValue = false;
};

// Checks one choice against the passes (passes::scheduleChoiceError): Sema
// is given it, as the passes come after it.
using ScheduleChoiceCheck = std::function<std::optional<ScheduleError>(const ScheduleChoice &)>;

// `register_tile=8 skip=stage_shared`: the schedule as the command line's
// words would give it.
std::string describeSchedule(const Schedule &schedule);

} // namespace loopc
