#!/usr/bin/env bash
# Builds the loopc binary to carry to the GPU machine, which has the CUDA
# driver but no LLVM or ANTLR: LOOPC_STATIC=ON links LLVM's static component
# libraries, ANTLR's static runtime, libstdc++ and libgcc into build-static/,
# and the result is stripped. The script then shows what the binary still
# needs and fails unless that is only the C library, libm, libz and libzstd
# (plus the dynamic loader, and libpthread/libdl/librt where glibc still
# splits them out). libcuda is opened at run time with dlopen, never linked.
# libdevice.10.bc ($LOOPC_LIBDEVICE, else the CUDA toolkit's) is copied next to
# the binary, where loopc looks first on a GPU machine without the toolkit.
#
# Extra arguments go to the CMake configure step. JOBS sets the build's
# parallelism (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build-static -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOPC_STATIC=ON \
  -DLOOPC_BUILD_TESTS=OFF "$@" >/dev/null
cmake --build build-static -j "${JOBS:-$(nproc)}" --target loopc

binary=build-static/loopc
strip --strip-all "$binary"

echo "$binary: $(stat -c %s "$binary") bytes ($(du -h "$binary" | cut -f1)) stripped"
echo "ldd $binary:"
ldd "$binary" | sed 's/^/  /'
newest_glibc=$(objdump -T "$binary" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "newest glibc symbol version needed: $newest_glibc"

allowed='^(libc\.so\.6|libm\.so\.6|libz\.so\.1|libzstd\.so\.1|ld-linux-x86-64\.so\.2|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1)$'
unexpected=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -Ev "$allowed" || true)
if [ -n "$unexpected" ]; then
  echo "error: $binary needs libraries the GPU machine may lack:" $unexpected >&2
  exit 1
fi
libdevice=${LOOPC_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
if [ ! -f "$libdevice" ]; then
  echo "error: no libdevice at $libdevice (set LOOPC_LIBDEVICE); GPU math needs it" >&2
  exit 1
fi
cp "$libdevice" build-static/libdevice.10.bc
echo "ok: $binary needs only libc, libm, libz and libzstd; carry it with build-static/libdevice.10.bc"
