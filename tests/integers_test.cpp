// The language's integer arithmetic (support/IntegerArithmetic.h), which the
// interpreter, the simplifier, the GPU engine's host evaluator and the
// evaluation of extents share: its edge cases, in both widths.
#include "support/IntegerArithmetic.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

using namespace loopc;

template <typename T> void checkWrapping() {
  const T min = std::numeric_limits<T>::min(), max = std::numeric_limits<T>::max();
  CHECK(wrappingAdd<T>(max, 1) == min);
  CHECK(wrappingSubtract<T>(min, 1) == max);
  CHECK(wrappingMultiply<T>(max, 2) == -2);
  CHECK(wrappingNegate<T>(min) == min);
  CHECK(wrappingDivide<T>(-7, 2) == -3);
  CHECK(wrappingRemainder<T>(-7, 2) == -1);
  CHECK(wrappingDivide<T>(min, -1) == min);
  CHECK(wrappingRemainder<T>(min, -1) == 0);
  CHECK(wrappingRemainder<T>(5, -1) == 0);
  CHECK_FALSE(wrappingDivide<T>(1, 0).has_value());
  CHECK_FALSE(wrappingRemainder<T>(1, 0).has_value());
}

template <typename T> void checkExact() {
  const T min = std::numeric_limits<T>::min(), max = std::numeric_limits<T>::max();
  CHECK_FALSE(exactAdd<T>(max, 1).has_value());
  CHECK(exactAdd<T>(max - 1, 1) == max);
  CHECK_FALSE(exactSubtract<T>(min, 1).has_value());
  CHECK_FALSE(exactMultiply<T>(max, 2).has_value());
  CHECK_FALSE(exactDivide<T>(min, -1).has_value());
  CHECK_FALSE(exactRemainder<T>(min, -1).has_value());
  CHECK(exactDivide<T>(max, -1) == -max);
  CHECK(exactRemainder<T>(7, -1) == 0);
  CHECK_FALSE(exactDivide<T>(3, 0).has_value());
  CHECK(exactDivide<T>(0, -1) == 0);
}

TEST_CASE("programs wrap and divide toward zero and MIN / -1 wraps to MIN") {
  checkWrapping<int32_t>();
  checkWrapping<int64_t>();
}

TEST_CASE("extents are exact: no result past the type's range") {
  checkExact<int32_t>();
  checkExact<int64_t>();
}
