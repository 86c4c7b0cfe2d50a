// Status words back to Errors (see DeviceErrors.h).
#include "codegen/DeviceErrors.h"

namespace loopc::codegen {

Status deviceErrorStatus(uint32_t word, const DeviceErrorSites &sites) {
  if (word == 0)
    return {};
  if (word > sites.size())
    return makeError("generated code reported an unknown error site " + std::to_string(word));
  return makeError(sites[word - 1].message, sites[word - 1].range);
}

} // namespace loopc::codegen
