#include "support/Schedule.h"

namespace loopc {

std::string describeSchedule(const Schedule &schedule) {
  std::string described;
  for (const ScheduleChoice &choice : schedule)
    described += (described.empty() ? "" : " ") + choice.name + "=" + choice.value;
  return described;
}

} // namespace loopc
