/* A C program calling a kernel; exits 0 when the result holds. */
#include "pick_b.h"

int main(void) {
  float x[3] = {1, 2, 3};
  return shift(x, 3) == LOOPC_SUCCESS && x[0] == 2 && x[2] == 4 ? 0 : 1;
}
