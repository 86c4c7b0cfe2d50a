// loopc's C++ API (C++17) over the C runtime, for programs calling kernels
// compiled ahead of time (docs/embedding.md, "From C++"): failures as
// exceptions, arrays as spans, buffers that free themselves, the device and
// timers. The generated headers use it for their C++ functions, declared in
// namespace loopc::kernels beside the C ones.
#ifndef LOOPC_LOOPC_HPP
#define LOOPC_LOOPC_HPP

#include "loopc/runtime.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace loopc {

// A failed call: its status and the runtime's message.
class Error : public std::runtime_error {
public:
  Error(loopc_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  loopc_status status() const noexcept { return status_; }

private:
  loopc_status status_;
};

// Throws the thread's last error when `status` is a failure.
inline void check(loopc_status status) {
  if (status != LOOPC_SUCCESS)
    throw Error(status, loopc_runtime_last_error(nullptr));
}

// A run of `size()` contiguous elements (std::span's part loopc needs, for
// C++17): from a pointer and a count, a std::vector, a std::array or a C
// array; Span<const T> from any of those of T too.
template <typename T> class Span {
public:
  Span() = default;
  Span(T *data, std::size_t size) : data_(data), size_(size) {}
  template <typename U, typename = std::enable_if_t<std::is_same_v<std::remove_const_t<T>, U>>>
  Span(std::vector<U> &values) : data_(values.data()), size_(values.size()) {}
  template <typename U, typename = std::enable_if_t<std::is_const_v<T> &&
                                                    std::is_same_v<std::remove_const_t<T>, U>>>
  Span(const std::vector<U> &values) : data_(values.data()), size_(values.size()) {}
  template <typename U, std::size_t N,
            typename = std::enable_if_t<std::is_same_v<std::remove_const_t<T>, U>>>
  Span(std::array<U, N> &values) : data_(values.data()), size_(N) {}
  template <typename U, std::size_t N,
            typename = std::enable_if_t<std::is_const_v<T> &&
                                        std::is_same_v<std::remove_const_t<T>, U>>>
  Span(const std::array<U, N> &values) : data_(values.data()), size_(N) {}
  template <std::size_t N> Span(T (&values)[N]) : data_(values), size_(N) {}
  template <typename U, typename = std::enable_if_t<std::is_const_v<T> &&
                                                    std::is_same_v<std::remove_const_t<T>, U>>>
  Span(const Span<U> &other) : data_(other.data()), size_(other.size()) {}

  T *data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

private:
  T *data_ = nullptr;
  std::size_t size_ = 0;
};

enum class Device { Gpu = LOOPC_DEVICE_CUDA, Cpu = LOOPC_DEVICE_CPU };

// Where the functions of objects compiled with GPU code run
// (loopc_use_device, loopc_used_device).
inline void use_device(Device device) {
  check(loopc_use_device(static_cast<loopc_device_kind>(device)));
}
inline Device used_device() { return static_cast<Device>(loopc_used_device()); }

// Waits for the calls that did not wait (loopc_wait_for_calls).
inline void wait_for_calls() { check(loopc_wait_for_calls()); }

// `count` elements of T on the device the functions run on, zeroed, freed
// with the object; moves, does not copy.
template <typename T> class Buffer {
  static_assert(std::is_trivially_copyable_v<T>, "a Buffer holds plain values");

public:
  explicit Buffer(std::size_t count) : count_(count) {
    check(loopc_buffer_create(count * sizeof(T), &buffer_));
  }
  // A buffer holding a copy of `values`.
  explicit Buffer(Span<const T> values) : Buffer(values.size()) { upload(values); }
  Buffer(Buffer &&other) noexcept
      : buffer_(std::exchange(other.buffer_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  Buffer &operator=(Buffer &&other) noexcept {
    if (this != &other) {
      loopc_buffer_destroy(buffer_);
      buffer_ = std::exchange(other.buffer_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { loopc_buffer_destroy(buffer_); }

  std::size_t size() const noexcept { return count_; }
  Device device() const { return static_cast<Device>(loopc_buffer_device(buffer_)); }
  loopc_buffer *get() const noexcept { return buffer_; }

  // Copies `values` in from element `offset` on, or out into `values`.
  void upload(Span<const T> values, std::size_t offset = 0) {
    check(loopc_buffer_upload(buffer_, offset * sizeof(T), values.data(),
                              values.size() * sizeof(T)));
  }
  void download(Span<T> values, std::size_t offset = 0) const {
    check(loopc_buffer_download(buffer_, offset * sizeof(T), values.data(),
                                values.size() * sizeof(T)));
  }
  std::vector<T> to_vector() const {
    std::vector<T> values(count_);
    download(Span<T>(values.data(), values.size()));
    return values;
  }

private:
  loopc_buffer *buffer_ = nullptr;
  std::size_t count_ = 0;
};

// Times the calls between its construction and stop(), where they run.
class Timer {
public:
  Timer() { check(loopc_timer_start(&timer_)); }
  Timer(const Timer &) = delete;
  Timer &operator=(const Timer &) = delete;
  ~Timer() {
    double ignored;
    if (timer_)
      loopc_timer_stop(timer_, &ignored);
  }
  // Waits for the calls since the start; their milliseconds. Once.
  double stop() {
    double milliseconds = 0;
    loopc_timer *timer = std::exchange(timer_, nullptr);
    if (!timer)
      throw Error(LOOPC_ERROR_INVALID_ARGUMENT, "loopc::Timer::stop: the timer was stopped");
    check(loopc_timer_stop(timer, &milliseconds));
    return milliseconds;
  }

private:
  loopc_timer *timer_ = nullptr;
};

namespace detail {

// The elements an array of these extents has, or -1 where an extent is
// negative or the count overflows (the C function then says why).
inline int64_t elementCount(std::initializer_list<int64_t> extents) {
  int64_t count = 1;
  for (int64_t extent : extents)
    if (extent < 0 || __builtin_mul_overflow(count, extent, &count))
      return -1;
  return count;
}

// Throws when `given` elements are fewer than `needed` (when known).
inline void checkElements(const char *kernel, const char *array, const char *type,
                          std::size_t given, int64_t needed) {
  if (needed >= 0 && given < static_cast<std::size_t>(needed))
    throw Error(LOOPC_ERROR_INVALID_ARGUMENT,
                std::string("kernel '") + kernel + "': '" + array + "' has " +
                    std::to_string(given) + (given == 1 ? " element" : " elements") +
                    "; its type, " + type + ", needs " + std::to_string(needed));
}

} // namespace detail

} // namespace loopc

#endif // LOOPC_LOOPC_HPP
