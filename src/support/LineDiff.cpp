// Unified line diffs (see LineDiff.h): a longest common subsequence of the
// lines, after the common head and tail are set aside (a pass most often
// changes a few lines of a long function).
#include "support/LineDiff.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

namespace loopc {

namespace {

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// One line of the edit script: kept (in both), removed (from before) or
// added (in after).
struct Edit {
  char mark; // ' ', '-', '+'
  const std::string *line;
};

// Beyond this many cells the middle is shown as all removed, then all added,
// rather than searched for common lines.
constexpr size_t kMostCells = size_t(1) << 26;

std::vector<Edit> editScript(const std::vector<std::string> &a, const std::vector<std::string> &b) {
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head])
    ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  size_t n = a.size() - head - tail, m = b.size() - head - tail;
  std::vector<Edit> edits;
  for (size_t i = 0; i < head; ++i)
    edits.push_back({' ', &a[i]});
  if (n * m <= kMostCells) {
    // lcs[i][j]: the longest common subsequence of a's middle from i and b's from j.
    std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t & { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        at(i, j) = a[head + i] == b[head + j] ? at(i + 1, j + 1) + 1
                                              : std::max(at(i + 1, j), at(i, j + 1));
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] == b[head + j]) {
        edits.push_back({' ', &a[head + i]});
        ++i, ++j;
      } else if (j < m && (i == n || at(i, j + 1) > at(i + 1, j))) {
        edits.push_back({'+', &b[head + j++]});
      } else {
        edits.push_back({'-', &a[head + i++]});
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i)
      edits.push_back({'-', &a[head + i]});
    for (size_t j = 0; j < m; ++j)
      edits.push_back({'+', &b[head + j]});
  }
  for (size_t i = a.size() - tail; i < a.size(); ++i)
    edits.push_back({' ', &a[i]});
  return edits;
}

} // namespace

std::string unifiedLineDiff(const std::string &before, const std::string &after, int context) {
  std::vector<std::string> a = splitLines(before), b = splitLines(after);
  std::vector<Edit> edits = editScript(a, b);
  size_t reach = static_cast<size_t>(std::max(context, 0));
  std::ostringstream out;
  size_t next = 0;
  // Lines of `before` and `after` consumed before edits[k].
  std::vector<size_t> beforeLine(edits.size() + 1, 0), afterLine(edits.size() + 1, 0);
  for (size_t k = 0; k < edits.size(); ++k) {
    beforeLine[k + 1] = beforeLine[k] + (edits[k].mark != '+');
    afterLine[k + 1] = afterLine[k] + (edits[k].mark != '-');
  }
  while (next < edits.size()) {
    auto changed = std::find_if(edits.begin() + static_cast<std::ptrdiff_t>(next), edits.end(),
                                [](const Edit &edit) { return edit.mark != ' '; });
    if (changed == edits.end())
      break;
    size_t first = static_cast<size_t>(changed - edits.begin());
    size_t begin = first > reach ? first - reach : 0;
    begin = std::max(begin, next);
    // The hunk runs on while the next change is within twice the context.
    size_t end = first;
    for (size_t k = first; k < edits.size(); ++k) {
      if (edits[k].mark != ' ')
        end = k + 1;
      else if (k - end + 1 > 2 * reach)
        break;
    }
    end = std::min(edits.size(), end + reach);
    size_t removedCount = beforeLine[end] - beforeLine[begin];
    size_t addedCount = afterLine[end] - afterLine[begin];
    // As diff(1) writes them: a range of no lines starts at the line before.
    auto start = [](size_t line, size_t count) { return count == 0 ? line : line + 1; };
    out << "@@ -" << start(beforeLine[begin], removedCount) << "," << removedCount << " +"
        << start(afterLine[begin], addedCount) << "," << addedCount << " @@\n";
    for (size_t k = begin; k < end; ++k)
      out << edits[k].mark << *edits[k].line << "\n";
    next = end;
  }
  return out.str();
}

} // namespace loopc
