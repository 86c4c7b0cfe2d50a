// Outputs that would overwrite an input of the same command or one another
// (`compile x.loop -o x.loop`, two `--out` to one file) are refused before
// anything is written, as C compilers refuse `cc x.c -o x.c`: the loss of a
// source file or of one output is silent otherwise.
#pragma once

#include "support/Diagnostics.h"
#include "support/Error.h"

#include <string>
#include <vector>

namespace loopc::driver {

// A file a command reads or writes, with how the user named it, for the
// message: "-o x.h", "--out b=f.npy", "the program file 'x.loop'".
struct PathUse {
  std::string path;
  std::string description;
};

// Whether `a` and `b` name one file: by the file system's identity when both
// exist (links and other spellings of one file), else by the normalized
// absolute path.
bool isSameFile(const std::string &a, const std::string &b);

// An error naming the first output that is one of `inputs` or another output.
Status checkDistinctOutputs(const std::vector<PathUse> &inputs,
                            const std::vector<PathUse> &outputs);

// The .loop files of a loaded program (the main file and its imports).
std::vector<PathUse> sourceFileUses(const SourceManager &sources);

} // namespace loopc::driver
