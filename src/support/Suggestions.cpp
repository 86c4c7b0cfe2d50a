#include "support/Suggestions.h"

#include <algorithm>

namespace loopc {

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string closestName(const std::string &name, std::vector<std::string> candidates) {
  std::sort(candidates.begin(), candidates.end());
  size_t limit = name.size() / 3;
  if (limit == 0)
    return "";
  const std::string *best = nullptr;
  size_t bestDistance = limit + 1;
  for (const std::string &candidate : candidates) {
    size_t distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = &candidate;
      bestDistance = distance;
    }
  }
  return best ? *best : "";
}

} // namespace loopc
