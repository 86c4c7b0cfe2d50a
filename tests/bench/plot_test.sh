#!/usr/bin/env bash
# bench/plot.py on a small table: one bar per number in each ratio column
# (none for a row without one), its value printed, the caption and the title
# escaped; a table without a ratio column, or without a table, is refused.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "plot_test: $*" >&2
  exit 1
}

cat >"$work/table.md" <<'TABLE'
Device: a test machine <2 cores>
Date: 2026-01-01 · commit: abc1234

| kernel | sizes | loopc ms | gcc ms | Polly ms | gcc / loopc | Polly / loopc |
| --- | --- | ---: | ---: | ---: | ---: | ---: |
| fast | N=10 | 1.0 | 8.0 | 2.0 | 8.00 | 2.00 |
| slow | N=20 | 4.0 | 1.0 | failed | 0.25 | - |
TABLE
python3 "$root/bench/plot.py" "$work/table.md" "$work/out.svg" --title "A & B"
svg=$(cat "$work/out.svg")
[[ $svg == "<svg "* ]] || fail "not an SVG"
bars=$(grep -c 'height="14" fill="#' "$work/out.svg" || true)
((bars == 3)) || fail "expected 3 bars (8, 2 and 0.25), drew $bars"
for value in '>8<' '>2<' '>0.25<' 'A &amp; B' 'a test machine &lt;2 cores&gt;' 'fast, N=10' 'slow, N=20'; do
  grep -qF "$value" "$work/out.svg" || fail "missing $value"
done
python3 "$root/bench/plot.py" "$work/table.md" "$work/fast.svg" --rows '^fast'
grep -qF 'slow, N=20' "$work/fast.svg" && fail "--rows kept a row it does not match"

printf '| kernel | loopc ms |\n| --- | ---: |\n| k | 1.0 |\n' >"$work/noratio.md"
if python3 "$root/bench/plot.py" "$work/noratio.md" "$work/no.svg" 2>"$work/err"; then
  fail "a table without a ratio column was drawn"
fi
grep -q "no ratio column" "$work/err" || fail "unclear refusal: $(cat "$work/err")"
echo "plot_test: passed"
