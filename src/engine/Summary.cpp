// Summaries of output arrays (see Summary.h).
#include "engine/Summary.h"

#include <sstream>

namespace loopc {

std::string summarizeArray(const std::string &name, const HostArray &array, size_t valueCount) {
  std::ostringstream out;
  out.precision(7);
  out << name << ": " << scalarTypeName(array.type);
  for (int64_t extent : array.shape)
    out << "[" << extent << "]";
  size_t count = array.elementCount();

  if (array.type == ScalarType::Bool) {
    size_t trueCount = 0;
    for (size_t i = 0; i < count; ++i)
      trueCount += array.getAsInt(i) != 0;
    out << " true=" << trueCount;
  } else if (isInteger(array.type)) {
    // 128 bits hold the exact sum of any array that fits in memory.
    __int128 sum = 0;
    for (size_t i = 0; i < count; ++i)
      sum += array.getAsInt(i);
    bool negative = sum < 0;
    unsigned __int128 magnitude = negative ? -static_cast<unsigned __int128>(sum) : sum;
    std::string digits;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + magnitude % 10));
      magnitude /= 10;
    } while (magnitude != 0);
    out << " sum=" << (negative ? "-" : "") << digits;
  } else {
    double sum = 0;
    for (size_t i = 0; i < count; ++i)
      sum += array.getAsDouble(i);
    out << " sum=" << sum;
  }

  if (count == 0)
    return out.str();
  out << (array.rank() == 0 ? " value:" : " first:");
  for (size_t i = 0; i < count && i < valueCount; ++i) {
    if (array.type == ScalarType::Bool)
      out << (array.getAsInt(i) ? " true" : " false");
    else if (isInteger(array.type))
      out << " " << array.getAsInt(i);
    else
      out << " " << array.getAsDouble(i);
  }
  if (count > valueCount)
    out << " ...";
  return out.str();
}

} // namespace loopc
