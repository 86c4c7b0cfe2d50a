// Status records back to Errors (see DeviceErrors.h).
#include "codegen/DeviceErrors.h"

namespace loopc::codegen {

std::string formatDeviceError(const std::string &message, const int64_t values[2]) {
  std::string text;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '{' && i + 2 < message.size() &&
        (message[i + 1] == '0' || message[i + 1] == '1') && message[i + 2] == '}') {
      text += std::to_string(values[message[i + 1] - '0']);
      i += 2;
      continue;
    }
    text += message[i];
  }
  return text;
}

Status deviceErrorStatus(const DeviceErrorRecord &record, const DeviceErrorSites &sites) {
  if (record.site == 0)
    return {};
  if (record.site > sites.size())
    return makeError("generated code reported an unknown error site " +
                     std::to_string(record.site));
  const DeviceErrorSite &site = sites[record.site - 1];
  return makeError(formatDeviceError(site.message, record.values), site.range);
}

} // namespace loopc::codegen
