// Async copies of a box into shared memory (see AsyncFills.h).
#include "passes/lowering/AsyncFills.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr;
using ir::Stmt;

namespace {

const int64_t kCopyBytes = 16;

// Whether `expr` is a multiple of `factor` whatever its variables are.
bool provenMultiple(const Expr &expr, int64_t factor) {
  if (const auto *constant = expr->as<IntImm>())
    return constant->value % factor == 0;
  if (const auto *cast = expr->as<Cast>())
    return isInteger(cast->operand->type) && provenMultiple(cast->operand, factor);
  const auto *binary = expr->as<Binary>();
  if (!binary)
    return false;
  switch (binary->op) {
  case BinaryOpKind::Mul:
    return provenMultiple(binary->lhs, factor) || provenMultiple(binary->rhs, factor);
  case BinaryOpKind::Add:
  case BinaryOpKind::Sub:
    return provenMultiple(binary->lhs, factor) && provenMultiple(binary->rhs, factor);
  default:
    return false;
  }
}

// Whether `expr` is a constant that is not a multiple of `factor`.
bool provenNotMultiple(const Expr &expr, int64_t factor) {
  const auto *constant = expr->as<IntImm>();
  return constant && constant->value % factor != 0;
}

Expr clamp(Expr value, int64_t low, Expr high) {
  return maxOf(minOf(std::move(value), high), makeI64(low));
}

// Every thread copies `width` elements at a time: copy `round * threads +
// thread` of the box's rows times its groups of `width` along the row, in
// row-major order, so consecutive threads copy consecutive addresses.
Stmt copiesOf(const AsyncBox &box, int64_t width) {
  std::vector<int64_t> grid = box.extents;
  grid.back() = (grid.back() + width - 1) / width;
  int64_t total = 1;
  for (int64_t extent : grid)
    total *= extent;
  int64_t rounds = (total + box.threads - 1) / box.threads;
  std::string prefix = box.shared->name + ".copy" + std::to_string(width);
  std::string roundVar = prefix + ".round", elementVar = prefix + ".element";
  Expr element = makeVar(ScalarType::I64, elementVar);
  std::vector<Expr> local, source;
  if (box.copy)
    local.push_back(box.copy);
  Expr rowInArray = std::make_shared<BoolImm>(true);
  int64_t stride = total;
  size_t last = grid.size() - 1;
  Expr valid;
  for (size_t d = 0; d < grid.size(); ++d) {
    stride /= grid[d];
    Expr index = stride == 1 ? element : div(element, makeI64(stride));
    if (d > 0)
      index = rem(index, makeI64(grid[d]));
    if (d == last && width > 1)
      index = mul(index, makeI64(width));
    local.push_back(index);
    Expr at = add(box.origin[d], index);
    Expr extent = toI64(box.array->shape[d]);
    if (d < last) {
      rowInArray =
          logicalAnd(rowInArray, logicalAnd(greaterOrEqual(at, makeI64(0)), lessThan(at, extent)));
      source.push_back(clamp(at, 0, sub(extent, makeI64(1))));
      continue;
    }
    // The elements of the group inside the row; the source clamped to a
    // group that starts in the array and stays aligned (the row's length is
    // a multiple of the width wherever the width is more than 1).
    Expr inRow = clamp(sub(extent, at), 0, makeI64(width));
    valid = select(logicalAnd(rowInArray, greaterOrEqual(at, makeI64(0))), inRow, makeI64(0));
    source.push_back(clamp(at, 0, sub(extent, makeI64(width))));
  }
  if (box.transposed)
    std::swap(local[local.size() - 2], local.back());
  Stmt copy = std::make_shared<AsyncCopy>(box.shared, std::move(local), box.array,
                                          std::move(source), static_cast<int>(width), valid);
  if (rounds * box.threads != total)
    copy = std::make_shared<IfThenElse>(lessThan(element, makeI64(total)), copy);
  copy = std::make_shared<LetStmt>(
      elementVar,
      add(mul(makeVar(ScalarType::I64, roundVar), makeI64(box.threads)), box.linearThread), copy);
  // A loop, not unrolled: an async copy holds no register for its data, but
  // LLVM hoists the addresses of unrolled copies out of the stage loop, and
  // they stayed live across the compute (cnn_conv's 3 x 3 filters spilled
  // 580 bytes so).
  return std::make_shared<For>(roundVar, makeI64(0), makeI64(rounds), ForKind::Serial, 0, copy);
}

} // namespace

int64_t vectorElements(const AsyncBox &box) {
  auto size = static_cast<int64_t>(scalarSize(box.array->element));
  if (size < 4)
    return 0;
  int64_t width = kCopyBytes / size;
  const auto *sharedRow = box.shared->shape.back()->as<IntImm>();
  if (width <= 1 || box.transposed || !sharedRow || sharedRow->value % width != 0 ||
      box.extents.back() < width || provenNotMultiple(box.origin.back(), width) ||
      (box.array->shape.size() > 1 && provenNotMultiple(box.array->shape.back(), width)))
    return 1;
  return width;
}

Stmt asyncFill(const AsyncBox &box, int64_t vector) {
  if (vector <= 1)
    return copiesOf(box, 1);
  // Aligned copies of `vector` elements: each row of the array starts at a
  // multiple of them (the array itself is aligned to more than 16 bytes),
  // and so does the box.
  std::vector<Expr> multiples{box.origin.back()};
  if (box.array->shape.size() > 1)
    multiples.push_back(toI64(box.array->shape.back()));
  Expr aligned;
  for (const Expr &value : multiples) {
    if (provenMultiple(value, vector))
      continue;
    Expr test = equal(rem(value, makeI64(vector)), makeI64(0));
    aligned = aligned ? logicalAnd(aligned, test) : test;
  }
  if (!aligned)
    return copiesOf(box, vector);
  return std::make_shared<IfThenElse>(aligned, copiesOf(box, vector), copiesOf(box, 1));
}

} // namespace loopc::passes
