// The C++ functions of a generated header (loopc/loopc.hpp), as C++17: spans
// of vectors and arrays, buffers that free themselves, scalar results by
// reference, failures as loopc::Error, a timer. Prints what each call gave.
#include "kernels.h"

#include <array>
#include <cstdio>
#include <vector>

namespace {

template <typename Call> void attempt(const char *what, Call call) {
  try {
    call();
    std::printf("%s: ok\n", what);
  } catch (const loopc::Error &error) {
    std::printf("%s: %s (%s)\n", what, loopc_status_name(error.status()), error.what());
  }
}

void print(const char *name, const std::vector<float> &values) {
  std::printf("  %s =", name);
  for (float value : values)
    std::printf(" %g", value);
  std::printf("\n");
}

} // namespace

int main() {
  std::vector<float> x = {1, 2, 3, 4, 5}, y = {1, 1, 1, 1, 1};
  float s = 7;
  attempt("saxpy", [&] { loopc::kernels::saxpy(x, y, 2.0f, 5); });
  print("y", y);
  attempt("total", [&] { loopc::kernels::total(x, s, 5); });
  std::printf("  s = %g\n", s);
  std::array<int32_t, 3> at = {4, 0, 2};
  std::vector<float> picked(3);
  attempt("gather", [&] { loopc::kernels::gather(x, at, picked, 5, 3); });
  print("picked", picked);
  std::vector<float> short_output(2);
  attempt("gather into too few", [&] { loopc::kernels::gather(x, at, short_output, 5, 3); });
  int32_t outside[1] = {5};
  attempt("gather outside", [&] { loopc::kernels::gather(x, outside, picked, 5, 1); });

  loopc::Buffer<float> bx(x), by(std::vector<float>{1, 1, 1, 1, 1}), bs(1);
  loopc::Timer timer;
  attempt("saxpy on buffers", [&] { loopc::kernels::saxpy(bx, by, 2.0f, 5); });
  attempt("total on buffers", [&] { loopc::kernels::total(by, bs, 5); });
  double milliseconds = timer.stop();
  print("y from buffers", by.to_vector());
  print("s from buffers", bs.to_vector());
  std::printf("  timed: %s\n", milliseconds >= 0 ? "yes" : "no");
  // gather writes y whole: the call leaves the buffer's values to the kernel.
  loopc::Buffer<int32_t> bat(std::vector<int32_t>{4, 0, 2});
  loopc::Buffer<float> bpicked(std::vector<float>{9, 9, 9});
  attempt("gather on buffers", [&] { loopc::kernels::gather(bx, bat, bpicked, 5, 3); });
  print("picked from buffers", bpicked.to_vector());
  attempt("total on a short buffer", [&] { loopc::kernels::total(bs, bs, 5); });
  loopc::Buffer<float> moved = std::move(bx);
  std::printf("  moved: %zu elements, the source %zu\n", moved.size(), bx.size());
  attempt("stop twice", [&] { timer.stop(); });
  return 0;
}
