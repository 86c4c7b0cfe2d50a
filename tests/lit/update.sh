#!/usr/bin/env bash
# Regenerates the check lines of textual pass tests from what loopc prints
# now: for each `// RUN:` line of a FILE piped into `%FileCheck %s` (with an
# optional --check-prefix=P), the lines of that prefix are replaced by the
# command's output, each line a `// P-NEXT:` of the one before (`// P-LABEL:`
# for a kernel or function header, `// P:` after a blank line). Review the
# difference before committing it: the checks then say what the pass does.
#
# Usage: tests/lit/update.sh [LOOPC] FILE... (default LOOPC: build/loopc)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=$root/build/loopc
if [[ $# -gt 0 && -x $1 && $1 != *.loop ]]; then
  loopc=$1
  shift
fi
if [[ $# -eq 0 ]]; then
  echo "usage: $0 [LOOPC] FILE..." >&2
  exit 2
fi

for file in "$@"; do
  while IFS= read -r run; do
    command=${run%%|*%FileCheck*}
    checks=${run#*%FileCheck}
    prefix=CHECK
    if [[ $checks =~ --check-prefix[=[:space:]]([A-Za-z0-9_-]+) ]]; then
      prefix=${BASH_REMATCH[1]}
    fi
    command=${command//%loopc/$(realpath "$loopc")}
    # As lit.sh runs it: in the file's folder, %s its name alone.
    command=${command//%s/$(basename "$file")}
    output=$(cd "$(dirname "$file")" && bash -o pipefail -c "$command")
    kept=$(grep -v -E "^[[:space:]]*//[[:space:]]*$prefix(-NEXT|-LABEL)?:" "$file")
    {
      printf '%s\n' "$kept"
      # FileCheck reads {{ and [[ as a pattern's start: matched as regexes.
      printf '%s\n' "$output" | awk -v prefix="$prefix" '
        /^[[:space:]]*$/ { blank = 1; next }
        {
          line = $0
          gsub(/\{\{/, "{{\\{\\{}}", line)
          gsub(/\[\[/, "{{\\[\\[}}", line)
          if (line ~ /^(kernel|func) /) kind = prefix "-LABEL"
          else if (!seen || blank) kind = prefix
          else kind = prefix "-NEXT"
          print "// " kind ": " line
          seen = 1
          blank = 0
        }'
    } >"$file.new"
    mv "$file.new" "$file"
  done < <("$root/tests/lit/lit.sh" --runs "$file" | grep -F '%FileCheck')
done
