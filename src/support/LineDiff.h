// A line diff of two texts in the unified format (`@@ -a,b +c,d @@` hunks,
// lines marked ' ', '-' or '+'), for showing what one compiler pass changed
// (`loopc explain --changes`).
#pragma once

#include <string>

namespace loopc {

// The hunks that turn `before` into `after`, each with up to `context`
// unchanged lines around its changes; empty when the texts are equal.
std::string unifiedLineDiff(const std::string &before, const std::string &after, int context = 2);

} // namespace loopc
