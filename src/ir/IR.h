// The Loop IR: the representation every middle-end pass reads and writes, and
// both code generators (NVPTX and CPU) consume.
//
// Design (after Halide): nodes are immutable and reference counted, so a pass
// rebuilds only what it changes and shares the rest; the GPU execution model is
// explicit in the IR as loop kinds (GpuBlock/GpuThread) and as the memory space
// of each buffer (Global/Shared/Register), so `loopc explain` shows every
// mapping decision and code generation only reads them.
//
// Loops are normalized: `For` runs its variable over [min, min + extent) with
// step 1. Arrays keep their multi-dimensional indices until code generation,
// so the affine analyses see them.
#pragma once

#include "support/Diagnostics.h"
#include "support/ScalarTypes.h"
#include "support/Schedule.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loopc::ir {

using loopc::ScalarType;

// ---------------------------------------------------------------- buffers ---

enum class MemorySpace : uint8_t {
  Global,   // device (or host) memory: kernel parameters and global temporaries
  Shared,   // per-block scratchpad; only inside a GpuBlock loop
  Register, // per-thread storage (scalars and small arrays fully unrolled)
};
const char *memorySpaceName(MemorySpace memory);

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

// An array (or, with rank 0, a single mutable scalar). Buffers are shared by
// identity between the nodes that refer to them.
struct BufferInfo {
  std::string name;
  ScalarType element = ScalarType::F32;
  std::vector<Expr> shape; // extents, outermost first; empty for a scalar cell
  MemorySpace memory = MemorySpace::Global;
  bool isParameter = false; // a kernel argument (else allocated by Allocate)
  bool isWritten = false;   // some Store targets it (parameters: out/inout)
  SourceRange declared;     // where the .loop program declares it
  // The program's name for a pass's copy of its array (a register tile's
  // `t.x0y0` is `t`), which messages use; empty: `name` is.
  std::string programName;

  const std::string &nameInMessages() const { return programName.empty() ? name : programName; }
  // A private array given a slice per GPU thread (globalize_private_arrays):
  // its size is the array's times the grid's threads, which messages say.
  bool slicePerThread = false;
  // "local array 'd' is too large to allocate", and why for such an array.
  std::string tooLargeMessage() const;
};
using Buffer = std::shared_ptr<BufferInfo>;

// ------------------------------------------------------------ expressions ---

struct ExprNode {
  enum class Kind : uint8_t {
    IntImm,
    FloatImm,
    BoolImm,
    Var,
    Load,
    Unary,
    Binary,
    Select,
    Cast,
    Call
  };
  const Kind kind;
  const ScalarType type;

  ExprNode(Kind kind, ScalarType type) : kind(kind), type(type) {}
  virtual ~ExprNode() = default;

  template <typename T> const T *as() const {
    return kind == T::kKind ? static_cast<const T *>(this) : nullptr;
  }
};

struct IntImm : ExprNode {
  static constexpr Kind kKind = Kind::IntImm;
  IntImm(ScalarType type, int64_t value) : ExprNode(kKind, type), value(value) {}
  const int64_t value;
};

struct FloatImm : ExprNode {
  static constexpr Kind kKind = Kind::FloatImm;
  FloatImm(ScalarType type, double value) : ExprNode(kKind, type), value(value) {}
  const double value;
};

struct BoolImm : ExprNode {
  static constexpr Kind kKind = Kind::BoolImm;
  explicit BoolImm(bool value) : ExprNode(kKind, ScalarType::Bool), value(value) {}
  const bool value;
};

// A reference to an immutable scalar: a loop variable, a LetStmt binding, a
// kernel's size or scalar parameter. Names are unique within a function.
struct Var : ExprNode {
  static constexpr Kind kKind = Kind::Var;
  Var(ScalarType type, std::string name) : ExprNode(kKind, type), name(std::move(name)) {}
  const std::string name;
};

struct Load : ExprNode {
  static constexpr Kind kKind = Kind::Load;
  Load(Buffer buffer, std::vector<Expr> indices, SourceRange source = {}, bool speculative = false)
      : ExprNode(kKind, buffer->element), buffer(std::move(buffer)), indices(std::move(indices)),
        source(source), speculative(speculative) {}
  const Buffer buffer;
  const std::vector<Expr> indices; // one per dimension
  const SourceRange source;        // the .loop access it came from
  // A load made where its value may go unused (a register tile's copies past
  // the arrays' ends, computed and not stored): an index out of range gives
  // an unspecified value, never a fault or a bounds error. The code
  // generator clamps its indices into the array; shared staging reads it
  // from a box like any other. Printed `speculative A[i][k]`.
  const bool speculative;
};

enum class UnaryOpKind : uint8_t { Neg, Not };

struct Unary : ExprNode {
  static constexpr Kind kKind = Kind::Unary;
  Unary(UnaryOpKind op, Expr operand)
      : ExprNode(kKind, operand->type), op(op), operand(std::move(operand)) {}
  const UnaryOpKind op;
  const Expr operand;
};

enum class BinaryOpKind : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Min,
  Max,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or // on bool; both sides evaluated (lowering keeps short-circuit semantics
     // by turning `a && b` with side conditions into Select where needed)
};
const char *binaryOpName(BinaryOpKind op);
bool isComparison(BinaryOpKind op);

struct Binary : ExprNode {
  static constexpr Kind kKind = Kind::Binary;
  Binary(BinaryOpKind op, Expr lhs, Expr rhs, SourceRange source = {});
  const BinaryOpKind op;
  const Expr lhs, rhs;
  // The .loop expression it came from, where an integer division by zero is
  // reported (empty for arithmetic the passes make).
  const SourceRange source;
};

// `cond ? a : b`. Only the chosen side is evaluated: code generation branches
// when a side may fault (it contains a Load) and selects otherwise.
struct Select : ExprNode {
  static constexpr Kind kKind = Kind::Select;
  Select(Expr cond, Expr thenValue, Expr elseValue)
      : ExprNode(kKind, thenValue->type), cond(std::move(cond)), thenValue(std::move(thenValue)),
        elseValue(std::move(elseValue)) {}
  const Expr cond, thenValue, elseValue;
};

struct Cast : ExprNode {
  static constexpr Kind kKind = Kind::Cast;
  Cast(ScalarType type, Expr operand) : ExprNode(kKind, type), operand(std::move(operand)) {}
  const Expr operand;
};

// A math builtin (user functions are inlined by the lowering).
struct Call : ExprNode {
  static constexpr Kind kKind = Kind::Call;
  Call(ScalarType type, loopc::Builtin builtin, std::vector<Expr> args)
      : ExprNode(kKind, type), builtin(builtin), args(std::move(args)) {}
  const loopc::Builtin builtin;
  const std::vector<Expr> args;

  // A call of a math routine (isMathRoutine below).
  bool isMathRoutine() const;
};

// exp, log, sin, cos, tanh and pow: on every target a routine of tens to
// hundreds of instructions (libdevice, libm) with a slow path for large
// arguments, not an instruction. Passes weigh code size by it; the NVPTX
// target takes these from libdevice.
bool isMathRoutine(loopc::Builtin builtin);

// ------------------------------------------------------------- statements ---

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

enum class ForKind : uint8_t {
  Serial,     // sequential
  Parallel,   // iterations independent (from parfor), not yet mapped
  Unrolled,   // fully unrolled by code generation (constant extent)
  Vectorized, // SIMD lanes (constant extent)
  GpuBlock,   // one iteration per block along `gpuDim`
  GpuThread,  // one iteration per thread of a block along `gpuDim`
};
const char *forKindName(ForKind kind);

struct StmtNode {
  enum class Kind : uint8_t {
    For,
    IfThenElse,
    LetStmt,
    Store,
    Allocate,
    Barrier,
    WarpShuffle,
    AsyncCopy,
    AsyncCommit,
    AsyncWait,
    Check,
    Block,
    Reduce,
    Scan,
    AtomicUpdate,
    Launch
  };
  const Kind kind;
  explicit StmtNode(Kind kind) : kind(kind) {}
  virtual ~StmtNode() = default;

  template <typename T> const T *as() const {
    return kind == T::kKind ? static_cast<const T *>(this) : nullptr;
  }
};

struct For : StmtNode {
  static constexpr Kind kKind = Kind::For;
  For(std::string var, Expr min, Expr extent, ForKind forKind, int gpuDim, Stmt body,
      SourceRange source = {})
      : StmtNode(kKind), var(std::move(var)), min(std::move(min)), extent(std::move(extent)),
        forKind(forKind), gpuDim(gpuDim), body(std::move(body)), source(source) {}
  const std::string var; // type is min's type
  const Expr min, extent;
  const ForKind forKind;
  const int gpuDim; // 0, 1, 2 (x, y, z) for GpuBlock/GpuThread; 0 otherwise
  const Stmt body;
  const SourceRange source; // the .loop range it came from
};

struct IfThenElse : StmtNode {
  static constexpr Kind kKind = Kind::IfThenElse;
  IfThenElse(Expr cond, Stmt thenCase, Stmt elseCase = nullptr)
      : StmtNode(kKind), cond(std::move(cond)), thenCase(std::move(thenCase)),
        elseCase(std::move(elseCase)) {}
  const Expr cond;
  const Stmt thenCase, elseCase; // elseCase may be null
};

// Binds an immutable scalar `var` to `value` within `body`.
struct LetStmt : StmtNode {
  static constexpr Kind kKind = Kind::LetStmt;
  LetStmt(std::string var, Expr value, Stmt body)
      : StmtNode(kKind), var(std::move(var)), value(std::move(value)), body(std::move(body)) {}
  const std::string var; // type is value's type
  const Expr value;
  const Stmt body;
};

struct ReductionStep; // below, after ReduceOperator

struct Store : StmtNode {
  static constexpr Kind kKind = Kind::Store;
  Store(Buffer buffer, std::vector<Expr> indices, Expr value, SourceRange source = {},
        std::shared_ptr<const ReductionStep> reduction = nullptr)
      : StmtNode(kKind), buffer(std::move(buffer)), indices(std::move(indices)),
        value(std::move(value)), source(source), reduction(std::move(reduction)) {}
  const Buffer buffer;
  const std::vector<Expr> indices;
  const Expr value;
  const SourceRange source;
  // Set on `cell = combine(cell, value)` of a lowered reduction whose
  // operator commutes, so its order of combination is unspecified: code
  // generation may reassociate a builtin operator's combine across the
  // iterations around it (several partial sums, vector lanes), and a pass
  // may split the cell into several partial results (interleave_reductions).
  const std::shared_ptr<const ReductionStep> reduction;
};

// Allocates `buffer` (in its memory space) for the duration of `body`.
// Register and global storage starts zeroed (a program's local arrays);
// shared storage starts undefined: the passes that allocate it write each
// element before a barrier and any read of it, so no block pays to clear it.
struct Allocate : StmtNode {
  static constexpr Kind kKind = Kind::Allocate;
  Allocate(Buffer buffer, Stmt body)
      : StmtNode(kKind), buffer(std::move(buffer)), body(std::move(body)) {}
  const Buffer buffer;
  const Stmt body;
};

// Every thread of the block waits here; only in block-uniform control flow.
struct Barrier : StmtNode {
  static constexpr Kind kKind = Kind::Barrier;
  Barrier() : StmtNode(kKind) {}
};

// `target = value` as the thread in lane `lane ^ laneMask` of this thread's
// warp (32 consecutive threads of the block) computes it: a butterfly
// exchange in registers, with neither shared memory nor a barrier. Like a
// Barrier it is reached by every thread of the block (block-uniform control
// flow), whose thread count is a multiple of 32; laneMask is 1, 2, 4, 8 or 16.
struct WarpShuffle : StmtNode {
  static constexpr Kind kKind = Kind::WarpShuffle;
  WarpShuffle(Buffer target, Expr value, int laneMask)
      : StmtNode(kKind), target(std::move(target)), value(std::move(value)), laneMask(laneMask) {}
  const Buffer target; // a rank-0 register buffer of value's type
  const Expr value;
  const int laneMask;
};

// `target[targetIndices + e] = e < valid ? source[sourceIndices + e] : 0`
// for e in 0..elements along the innermost dimension of both: a copy from
// global into shared memory that the thread issues and goes on without
// waiting for (cp.async on sm_80 and later, which moves the data without a
// register). Its writes are only known to have landed after an AsyncWait
// that covers the group (AsyncCommit) it belongs to, and are seen by the
// other threads of the block only after a Barrier that follows that wait.
// `elements` times the element's size is 4, 8 or 16 bytes, and both
// addresses are aligned to it; `valid` (an integer, 0 to `elements`) counts
// the elements read, the rest filled with zeros without touching the source,
// whose indices must still lie in its array. Where nothing runs
// asynchronously (the CPU), it is a plain copy, which has the same meaning.
struct AsyncCopy : StmtNode {
  static constexpr Kind kKind = Kind::AsyncCopy;
  AsyncCopy(Buffer target, std::vector<Expr> targetIndices, Buffer source,
            std::vector<Expr> sourceIndices, int elements, Expr valid)
      : StmtNode(kKind), target(std::move(target)), targetIndices(std::move(targetIndices)),
        source(std::move(source)), sourceIndices(std::move(sourceIndices)), elements(elements),
        valid(std::move(valid)) {}
  const Buffer target; // shared
  const std::vector<Expr> targetIndices;
  const Buffer source; // global
  const std::vector<Expr> sourceIndices;
  const int elements;
  const Expr valid;

  int bytes() const { return elements * static_cast<int>(scalarSize(target->element)); }
};

// Closes the group of the AsyncCopies this thread issued since the last
// commit (cp.async.commit_group): an AsyncWait counts groups.
struct AsyncCommit : StmtNode {
  static constexpr Kind kKind = Kind::AsyncCommit;
  AsyncCommit() : StmtNode(kKind) {}
};

// Waits until at most `pending` of this thread's committed groups are still
// in flight (cp.async.wait_group): the older ones have landed.
struct AsyncWait : StmtNode {
  static constexpr Kind kKind = Kind::AsyncWait;
  explicit AsyncWait(int pending) : StmtNode(kKind), pending(pending) {}
  const int pending;
};

// Fails the run with `message` at `source` unless `condition` holds: a
// condition of the program that only the run decides, such as a range's step
// being positive, a local array's extent not negative, or a called kernel's
// extent matching its argument's (the interpreter reports the same). "{0}"
// and "{1}" in the message quote `values` (integers, at most two). Like an
// integer division by zero, a failure is recorded and the code goes on: what
// follows must stay harmless when the condition is false (a clamped
// allocation, a step of at least 1), as the first failure is the one reported.
struct Check : StmtNode {
  static constexpr Kind kKind = Kind::Check;
  Check(Expr condition, std::string message, std::vector<Expr> values, SourceRange source)
      : StmtNode(kKind), condition(std::move(condition)), message(std::move(message)),
        values(std::move(values)), source(source) {}
  const Expr condition; // bool
  const std::string message;
  const std::vector<Expr> values;
  const SourceRange source;
};

struct Block : StmtNode {
  static constexpr Kind kKind = Kind::Block;
  explicit Block(std::vector<Stmt> stmts) : StmtNode(kKind), stmts(std::move(stmts)) {}
  const std::vector<Stmt> stmts;
};

// The reduction operator of a Reduce: a builtin, or a user `assoc fn` whose
// inlined body is `combine` over the two variables `lhsVar` and `rhsVar`.
struct ReduceOperator {
  enum class Kind : uint8_t { Add, Mul, Min, Max, And, Or, User };
  Kind kind = Kind::Add;
  std::string userName;
  std::string lhsVar, rhsVar;
  Expr combine;
  // A user's operator whose combine gives the same value with its operands
  // swapped (the checker's sema::commutesAsWritten); the builtins all do.
  bool userCommutes = false;
};

// What a Store's reduction step combines: the operator and its neutral
// element (which the language lets a reduction combine in once per partial
// result).
struct ReductionStep {
  ReduceOperator op;
  Expr neutral;
};

// `accumulator[indices] = op-fold of value over the loop nest`, starting from
// the accumulator's current content (the lowering stores the neutral element
// first). The order of combination is unspecified. Lowered away by
// `lower_reductions`; no Reduce reaches code generation.
struct Reduce : StmtNode {
  static constexpr Kind kKind = Kind::Reduce;
  struct Loop {
    std::string var;
    Expr min, extent;
  };
  Reduce(Buffer accumulator, std::vector<Expr> indices, ReduceOperator op, Expr neutral,
         std::vector<Loop> loops, Stmt valueSetup, Expr value, SourceRange source = {})
      : StmtNode(kKind), accumulator(std::move(accumulator)), indices(std::move(indices)),
        op(std::move(op)), neutral(std::move(neutral)), loops(std::move(loops)),
        valueSetup(std::move(valueSetup)), value(std::move(value)), source(source) {}
  const Buffer accumulator;
  const std::vector<Expr> indices;
  const ReduceOperator op;
  const Expr neutral;
  const std::vector<Loop> loops; // outermost first
  // Statements computing the value at each point (e.g. inlined function
  // bodies); may be null. `value` is read after it.
  const Stmt valueSetup;
  const Expr value;
  const SourceRange source;
};

// An inclusive scan: at each point of `loop`, in order, `target[indices]`
// gets the op-fold of `value` over the points so far, starting from
// `neutral`. `indices` and `value` are read after `valueSetup` (may be null)
// at each point; each point writes its own element and no point reads what
// the scan writes, so the points may run in parallel. Lowered away by
// `lower_scans`. Like AtomicUpdate's, the operator's combine is closed.
struct Scan : StmtNode {
  static constexpr Kind kKind = Kind::Scan;
  Scan(Buffer target, std::vector<Expr> indices, ReduceOperator op, Expr neutral, Reduce::Loop loop,
       Stmt valueSetup, Expr value, SourceRange source = {}, SourceRange targetSource = {})
      : StmtNode(kKind), target(std::move(target)), indices(std::move(indices)), op(std::move(op)),
        neutral(std::move(neutral)), loop(std::move(loop)), valueSetup(std::move(valueSetup)),
        value(std::move(value)), source(source), targetSource(targetSource) {}
  const Buffer target;
  const std::vector<Expr> indices;
  const ReduceOperator op;
  const Expr neutral;
  const Reduce::Loop loop;
  const Stmt valueSetup;
  const Expr value;
  const SourceRange source; // the whole statement
  // The target's access (`y[i]`), where the interpreter reports its index
  // out of range: the stores lower_scans makes of it carry it.
  const SourceRange targetSource;
};

// `buffer[indices] = op(buffer[indices], value)` as one indivisible step, so
// parallel iterations may update the same element (a program's `combine`, a
// histogram); their order is unspecified. Code generation makes it atomic in
// global and shared memory and a plain update in a thread's registers.
// A user operator's `combine` is closed over its two operands: the generic
// traversals (IRVisitor, IRMutator) do not enter it.
struct AtomicUpdate : StmtNode {
  static constexpr Kind kKind = Kind::AtomicUpdate;
  AtomicUpdate(Buffer buffer, std::vector<Expr> indices, ReduceOperator op, Expr value,
               SourceRange source = {})
      : StmtNode(kKind), buffer(std::move(buffer)), indices(std::move(indices)), op(std::move(op)),
        value(std::move(value)), source(source) {}
  const Buffer buffer;
  const std::vector<Expr> indices;
  const ReduceOperator op;
  const Expr value;
  const SourceRange source;
};

// A kernel launch in host code, created by `extract_kernels`.
struct Launch : StmtNode {
  static constexpr Kind kKind = Kind::Launch;
  Launch(std::string kernel, std::vector<Expr> grid, std::vector<Expr> block,
         std::vector<Buffer> buffers, std::vector<Expr> scalars, SourceRange source = {})
      : StmtNode(kKind), kernel(std::move(kernel)), grid(std::move(grid)), block(std::move(block)),
        buffers(std::move(buffers)), scalars(std::move(scalars)), source(source) {}
  const std::string kernel;
  const std::vector<Expr> grid, block; // 3 extents each (x, y, z), i64
  const std::vector<Buffer> buffers;   // in the order of KernelFunc::buffers
  const std::vector<Expr> scalars;     // in the order of KernelFunc::scalars
  const SourceRange source;            // the parfor (or redomap) it came from
};

// ---------------------------------------------------------- functions ---

struct ScalarParam {
  std::string name;
  ScalarType type;
};

// A device kernel: its body runs once per (block, thread); the outermost
// loops of `body` are the GpuBlock/GpuThread loops over the launch geometry.
struct KernelFunc {
  std::string name;
  std::vector<Buffer> buffers;      // global buffers it reads or writes
  std::vector<ScalarParam> scalars; // sizes and scalars it uses
  Stmt body;
  int maxThreadsPerBlock = 0; // occupancy hint for NVPTX (`maxntid`), 0 = none
  int minBlocksPerSM = 0;     // occupancy hint (`minctasm`), 0 = none
  SourceRange source;
};

// The lowered form of one .loop kernel (an entry point). Before
// `extract_kernels` everything is in `body`; after it, `body` is host code
// (serial loops, scalar lets, Allocate of Global temporaries, Launch) and the
// device code lives in `kernels`.
struct Function {
  std::string name;
  std::vector<Buffer> buffers;      // array (and scalar-result) parameters, in order
  std::vector<ScalarParam> scalars; // scalar value parameters, then sizes
  Stmt body;
  std::vector<KernelFunc> kernels;
  SourceRange source;
  // Code generation checks every array access against its extents (a device
  // error quoting the index; `--bounds-check`).
  bool boundsChecked = false;
  // The program's name for the array of an access, by where the access
  // begins, where it is not the buffer's nameInMessages(): in a called
  // kernel, a parameter names the caller's array, and messages about the
  // access say the parameter's name, as the interpreter's do. Kept by source
  // location, so every pass's copies of the access keep it.
  std::map<SourceLoc, std::string> arrayNamesAt;
  // The program's name of each name the lowering made unique (the second
  // loop over `c` is `c_2`), which remarks use.
  std::map<std::string, std::string> programNames;
  // Conditions over the sizes a pass decided when compiling for the sizes of
  // one run (PipelineOptions::runSizes) instead of leaving the host a branch,
  // each with its outcome there: the code is right for any run where each
  // comes out the same (CompiledKernelCache checks).
  struct SizeChoice {
    Expr condition;
    bool holds;
  };
  std::vector<SizeChoice> sizeChoices;
  // The source of the program's `unsafe` kernels and blocks: accesses there
  // are not checked under bounds checks (BoundsProof takes them as proven).
  std::vector<SourceRange> uncheckedRegions;
  // The entry kernel's `@schedule`: the pipeline applies it over the
  // defaults (passes::PassChoices::kernelSchedules).
  Schedule schedule;
  // The array parameters whose every element the body writes (a nest of
  // parallel loops over their whole shape) before anything else touches
  // them: an `out` one need not be zeroed before a call. Recorded before the
  // passes, from the body as lowered.
  std::set<std::string> writtenWholeFirst;
};

// The product a float sum `a * b + c`, `c + a * b`, `a * b - c` or
// `c - a * b` is one fused multiply-add with (docs/language.md; the first
// operand on a tie): code generation and the GPU engine's host code compute
// it rounded once. None for any other expression (a product rounded on its
// own is a same-type Cast, not a Binary).
struct FusedProduct {
  const Binary *product;
  bool productFirst; // `a * b + c` or `a * b - c`
};
std::optional<FusedProduct> fusedProductOf(const Binary &sum);

// Whether an expression's type follows from what it is made of (a variable,
// a load, a cast, a comparison, arithmetic with one of these) rather than
// from where it stands: a literal, and arithmetic on literals only, take
// their type from their context in the printed IR, and are read back so
// (IRPrinter.h, IRParser.h).
bool typesItself(const Expr &expr);
// The type the printed IR gives a literal that nothing around it types and
// that says none (`2_i32` says one): i64 for an integer, f32 for a float.
ScalarType defaultLiteralType(const ExprNode &literal);

// Convenience constructors used by the lowering and the passes.
Expr makeInt(ScalarType type, int64_t value);
Expr makeI64(int64_t value);
Expr makeVar(ScalarType type, const std::string &name);
Expr makeBinary(BinaryOpKind op, Expr lhs, Expr rhs, SourceRange source = {});
Stmt makeBlock(std::vector<Stmt> stmts);  // flattens nested blocks, drops nulls
Expr zeroOf(ScalarType type);             // 0, 0.0 or false
Expr toI64(Expr expr);                    // an integer widened (or kept) as i64
Expr castTo(ScalarType type, Expr value); // a Cast, unless value has the type
// The IR the passes build, one operation a call: makeBinary without a
// source (what a pass makes has none of its own). Operands share one type.
Expr add(Expr lhs, Expr rhs);
Expr sub(Expr lhs, Expr rhs);
Expr mul(Expr lhs, Expr rhs);
Expr div(Expr lhs, Expr rhs);
Expr rem(Expr lhs, Expr rhs);
Expr minOf(Expr lhs, Expr rhs);
Expr maxOf(Expr lhs, Expr rhs);
Expr lessThan(Expr lhs, Expr rhs);
Expr lessOrEqual(Expr lhs, Expr rhs);
Expr greaterThan(Expr lhs, Expr rhs);
Expr greaterOrEqual(Expr lhs, Expr rhs);
Expr equal(Expr lhs, Expr rhs);
Expr notEqual(Expr lhs, Expr rhs);
Expr logicalAnd(Expr lhs, Expr rhs);
Expr logicalOr(Expr lhs, Expr rhs);
// `(a + (b - 1)) / b`: a / b rounded up, for a >= 0 and b > 0.
Expr ceilDiv(Expr a, Expr b);
Expr select(Expr cond, Expr thenValue, Expr elseValue);
// `a && b && c` as {a, b, c}: the operands of a tree of `&&`, left to right
// (an expression that is no `&&` is its own one conjunct).
std::vector<Expr> conjunctsOf(const Expr &expr);

} // namespace loopc::ir
