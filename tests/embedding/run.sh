#!/bin/sh
# Installs loopc from a build tree into a scratch prefix, then builds and runs
# the project in this folder against that installed package, as a user would:
#   tests/embedding/run.sh BUILD_DIR SCRATCH_DIR
# Fails if any step fails, or if the program links LLVM. Then builds the
# C-only project in c_only/ and the example of docs/embedding.md
# (samples/embedding), and checks that the projects of errors/ fail with
# loopc_add_kernels' messages.
set -eu
build=$(realpath "$1")
scratch=$2
here=$(dirname "$(realpath "$0")")
rm -rf "$scratch"
mkdir -p "$scratch"
scratch=$(realpath "$scratch")
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$here" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build"
if ldd "$scratch/build/embedding_check" | grep -i llvm; then
  echo "embedding_check links LLVM; embedded kernels must not need it" >&2
  exit 1
fi
"$scratch/build/embedding_check"
"$scratch/build/embedding_chain" 1001

# The Python package, when it was built (PYTHON, the interpreter it was built
# for): importable from the prefix, elsewhere than the source tree, with the
# standard library installed beside it.
if [ -n "${PYTHON:-}" ]; then
  site=$(echo "$scratch"/prefix/lib/python3*/*-packages)
  (cd "$scratch" && PYTHONPATH=$site "$PYTHON" -c '
import os, sys, numpy as np, loopc
assert loopc.__file__.startswith(sys.argv[1]), loopc.__file__
assert os.path.isfile(os.path.join(os.path.dirname(loopc.__file__), "stdlib", "linalg.loop"))
m = loopc.compile("import linalg;\nkernel k(A: in f32[M][N], x: in f32[N], y: out f32[M]) { gemv(A, x, y); }\n", device="cpu")
assert (m.k(np.eye(3, dtype=np.float32), np.arange(3, dtype=np.float32)) == [0, 1, 2]).all()
print("python: the installed package imports and runs")
' "$site")
fi

cmake -S "$here/c_only" -B "$scratch/c_only" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/c_only"
"$scratch/c_only/embedding_c"

# The example of docs/embedding.md (samples/embedding), built and run as its
# comment says, at a size that is a multiple of no tile.
cmake -S "$here/../../samples/embedding" -B "$scratch/sample" -G Ninja \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/sample"
"$scratch/sample/matmul_app" 77

# expect_refused CASE MESSAGE: configuring or building errors/ with CASE fails
# and says MESSAGE.
expect_refused() {
  if output=$(cmake -S "$here/errors" -B "$scratch/errors" -G Ninja -DCASE="$1" \
    -DCMAKE_PREFIX_PATH="$scratch/prefix" 2>&1 && cmake --build "$scratch/errors" 2>&1); then
    echo "errors/ with CASE=$1 built; expected: $2" >&2
    exit 1
  fi
  if ! printf '%s\n' "$output" | tr -s ' \n' ' ' | grep -qF "$2"; then
    printf '%s\n' "$output" >&2
    echo "errors/ with CASE=$1 failed without saying: $2" >&2
    exit 1
  fi
}
expect_refused missing_kernel "KERNELS names 'no_such_kernel', which no source of this call for app defines"
expect_refused defined_twice "the C function scale of app is defined by both"
expect_refused same_prefix_twice "app already compiles a source named"
echo "embedding: all checks passed"
