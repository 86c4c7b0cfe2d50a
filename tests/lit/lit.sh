#!/usr/bin/env bash
# Runs one textual pass test: the `// RUN:` lines of FILE, each a shell
# pipeline, with %loopc (the loopc binary), %FileCheck (LLVM's FileCheck) and
# %s (FILE) substituted; the test passes when every one exits 0. A RUN line
# ending in `\` continues on the next.
#
# Usage: tests/lit/lit.sh LOOPC FILECHECK FILE
#        tests/lit/lit.sh --runs FILE (prints the RUN lines, one a line, as
#        written: what tests/lit/update.sh reads)
set -euo pipefail

if [[ $# -eq 2 && $1 == --runs ]]; then
  file=$2
elif [[ $# -eq 3 ]]; then
  loopc=$1 filecheck=$2 file=$3
else
  echo "usage: $0 LOOPC FILECHECK FILE, or $0 --runs FILE" >&2
  exit 2
fi

runs=()
pending=
while IFS= read -r line; do
  [[ $line =~ ^[[:space:]]*//[[:space:]]*RUN:[[:space:]]?(.*)$ ]] || continue
  command=${BASH_REMATCH[1]}
  if [[ $command == *\\ ]]; then
    pending+="${command%\\} "
    continue
  fi
  runs+=("$pending$command")
  pending=
done <"$file"
if [[ ${#runs[@]} -eq 0 ]]; then
  echo "$file: no // RUN: line" >&2
  exit 2
fi

if [[ $1 == --runs ]]; then
  printf '%s\n' "${runs[@]}"
  exit 0
fi

# Each command runs in FILE's folder with %s its name alone, so what it
# prints of the file's path (a remark's location) is the same wherever the
# test is run from.
loopc=$(realpath "$loopc")
filecheck=$(realpath "$filecheck")
for run in "${runs[@]}"; do
  run=${run//%loopc/$loopc}
  run=${run//%FileCheck/$filecheck}
  run=${run//%s/$(basename "$file")}
  echo "RUN: $run"
  (cd "$(dirname "$file")" && bash -o pipefail -c "$run")
done
