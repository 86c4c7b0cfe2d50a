// The one readable form of the Loop IR, used by `loopc explain`, test golden
// strings and verifier messages. It reads like the loop nest it describes:
//
//   gpu_block.x for i.block in [0, (N + 255) / 256) {
//     gpu_thread.x for i.thread in [0, 256) {
//       let i = i.block * 256 + i.thread
//       if (i < N) {
//         y[i] = a * x[i] + y[i]
//
// Loop kinds, memory spaces, barriers and launches are all spelled out, so
// every mapping decision of the passes is visible.
#pragma once

#include "ir/IR.h"

#include <string>

namespace loopc::ir {

std::string toString(const Expr &expr);
std::string toString(const Stmt &stmt, int indent = 0);
std::string toString(const Function &function);
std::string toString(const KernelFunc &kernel);

// One line describing a statement without its body (`parallel for i in [0, M)`),
// for messages that name a node.
std::string describe(const Stmt &stmt);

// `global f32 A[M][K]`
std::string describe(const BufferInfo &buffer);

// How tightly an infix operator binds in the printed IR, as the printer
// parenthesises and the parser (IRParser.h) reads: `||` 1, `&&` 2, `==` and
// `!=` 3, the other comparisons 4, `+` and `-` 5, `*`, `/` and `%` 6 (a
// unary operator 7); min and max are written as calls (8).
int binaryPrecedence(BinaryOpKind op);

} // namespace loopc::ir
