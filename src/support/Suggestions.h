// "Did you mean" for a misspelt name: the closest of the names a message
// could have meant, within a small number of edits. Shared by the parser
// (keywords) and the semantic checks (declared names, builtins).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace loopc {

// Edits (insertions, deletions, substitutions and swaps of neighbours)
// that turn a into b.
size_t editDistance(const std::string &a, const std::string &b);

// The candidate closest to `name` within name.size() / 3 edits (short names
// are too close to everything to guess from); empty when none is.
std::string closestName(const std::string &name, std::vector<std::string> candidates);

} // namespace loopc
