// The abstract syntax tree of a .loop program. The parser (AstBuilder) fills in
// the syntax and source ranges; Sema fills in the fields marked "set by Sema"
// (types, resolved declarations, callees). After a successful Sema every such
// field is set, and the interpreter and the lowering to Loop IR rely on that.
#pragma once

#include "support/Diagnostics.h"
#include "support/ScalarTypes.h"
#include "support/Schedule.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace loopc {

// ---------------------------------------------------------------- types ---

// The most bytes one local array may hold (per iteration when private to a
// parfor's iterations), on every engine: beyond, "too large to allocate".
inline constexpr uint64_t kMaxLocalArrayBytes = uint64_t{1} << 32;

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// A declared type: a scalar, or an array of that scalar with one extent
// expression per dimension (`f32[M][K]`, `f32[N-2]`).
struct TypeSpec {
  ScalarType element = ScalarType::F32;
  std::vector<ExprPtr> dims;
  SourceRange range;
  bool isArray() const { return !dims.empty(); }
  size_t rank() const { return dims.size(); }
};

// --------------------------------------------------------- declarations ---

enum class Intent : uint8_t { None, In, Out, InOut };
// "in", "out", "inout" as written; "" for None.
const char *intentName(Intent intent);

// Everything a name can refer to: kernel/function parameters, the symbolic
// sizes of a kernel (bound from array arguments), let/var locals and loop
// variables.
struct VarDecl {
  enum class Kind : uint8_t { Param, Size, Let, Var, LoopVar };
  Kind kind;
  std::string name;
  TypeSpec type;                // scalar or array; sizes and loop variables are scalars
  Intent intent = Intent::None; // parameters only
  SourceRange range;
  // Set by Sema: true for a scalar `out`/`inout` parameter, which behaves as a
  // rank-0 array (it can be assigned and is returned to the caller).
  bool isScalarOutput() const {
    return kind == Kind::Param && !type.isArray() &&
           (intent == Intent::Out || intent == Intent::InOut);
  }
  bool isArray() const { return type.isArray(); }
  bool isMutable() const {
    return kind == Kind::Var || isScalarOutput() ||
           (kind == Kind::Param && type.isArray() && intent != Intent::In);
  }
};
using VarDeclPtr = std::unique_ptr<VarDecl>;

// ---------------------------------------------------------- expressions ---

enum class UnaryOp : uint8_t { Neg, Not };
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Rem, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
const char *binaryOpSpelling(BinaryOp op);

struct FnDecl;

struct Expr {
  enum class Kind : uint8_t {
    IntLit,
    FloatLit,
    BoolLit,
    Name,
    Index,
    Call,
    Cast,
    Unary,
    Binary,
    Conditional,
    Redomap
  };
  const Kind kind;
  SourceRange range;
  ScalarType type = ScalarType::I64; // set by Sema

  explicit Expr(Kind kind) : kind(kind) {}
  virtual ~Expr() = default;

  template <typename T> T *as() { return kind == T::kKind ? static_cast<T *>(this) : nullptr; }
  template <typename T> const T *as() const {
    return kind == T::kKind ? static_cast<const T *>(this) : nullptr;
  }
};

struct IntLitExpr : Expr {
  static constexpr Kind kKind = Kind::IntLit;
  IntLitExpr() : Expr(kKind) {}
  uint64_t value = 0; // the literal as written (always non-negative)
};

struct FloatLitExpr : Expr {
  static constexpr Kind kKind = Kind::FloatLit;
  FloatLitExpr() : Expr(kKind) {}
  double value = 0; // `inf` is a float literal too
};

struct BoolLitExpr : Expr {
  static constexpr Kind kKind = Kind::BoolLit;
  BoolLitExpr() : Expr(kKind) {}
  bool value = false;
};

// A scalar variable, a size, or (only as a call argument) a whole array.
struct NameExpr : Expr {
  static constexpr Kind kKind = Kind::Name;
  NameExpr() : Expr(kKind) {}
  std::string name;
  VarDecl *decl = nullptr; // set by Sema
};

struct IndexExpr : Expr {
  static constexpr Kind kKind = Kind::Index;
  IndexExpr() : Expr(kKind) {}
  std::string array;
  std::vector<ExprPtr> indices;
  VarDecl *decl = nullptr; // set by Sema
};

// A call of a math builtin or of a user function (`fn`).
struct CallExpr : Expr {
  static constexpr Kind kKind = Kind::Call;
  CallExpr() : Expr(kKind) {}
  std::string callee;
  std::vector<ExprPtr> args;
  bool isBuiltin = false;          // set by Sema
  Builtin builtin = Builtin::Sqrt; // set by Sema when isBuiltin
  FnDecl *fn = nullptr;            // set by Sema otherwise
};

// An explicit conversion `f32(x)`.
struct CastExpr : Expr {
  static constexpr Kind kKind = Kind::Cast;
  CastExpr() : Expr(kKind) {}
  ScalarType target = ScalarType::F32;
  ExprPtr operand;
};

struct UnaryExpr : Expr {
  static constexpr Kind kKind = Kind::Unary;
  UnaryExpr() : Expr(kKind) {}
  UnaryOp op = UnaryOp::Neg;
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  static constexpr Kind kKind = Kind::Binary;
  BinaryExpr() : Expr(kKind) {}
  BinaryOp op = BinaryOp::Add;
  ExprPtr lhs, rhs;
};

// A float multiply, as an operand of a sum: `a * b + c`, `c + a * b`,
// `a * b - c` and `c - a * b` round once, as a fused multiply-add
// (language.md). `floatProduct` is `operand` when it is a float multiply;
// `fusedProduct` the product a sum fuses with (the first on a tie), or null.
const BinaryExpr *floatProduct(const Expr &operand);
const BinaryExpr *fusedProduct(BinaryOp op, const Expr &lhs, const Expr &rhs);

// `cond ? a : b`; only the chosen operand is evaluated.
struct ConditionalExpr : Expr {
  static constexpr Kind kKind = Kind::Conditional;
  ConditionalExpr() : Expr(kKind) {}
  ExprPtr cond, thenExpr, elseExpr;
};

// `var in lo..hi by step`: the half-open range [lo, hi) with a positive step
// (1 when `by` is absent). The variable is declared by the range.
struct Range {
  VarDeclPtr var; // kind LoopVar; its type (set by Sema) is the bounds' type
  ExprPtr lo, hi;
  ExprPtr step; // null when absent
  SourceRange range;
};

// The reduction operator of a redomap.
struct ReduceOp {
  enum class Kind : uint8_t { Add, Mul, Min, Max, And, Or, User };
  Kind kind = Kind::Add;
  std::string userName;     // the function's name, for Kind::User
  FnDecl *userFn = nullptr; // set by Sema, for Kind::User
  SourceRange range;
};

// `+`, `min`, ... or the user function's name.
const char *reduceOpSpelling(const ReduceOp &op);

// The one neutral element a reduction with `op` may start from: 0 for `+`,
// 1 for `*` (a partial result may start from it, so it may be combined in
// more than once); none for the others, which give the same result however
// often their neutral is combined in. `wrongNeutralMessage` is the error
// for another value, in `construct` ("redomap" or "scan"), the checker's for a
// constant and every engine's at run time.
std::optional<int> requiredNeutral(const ReduceOp &op);
std::string wrongNeutralMessage(const ReduceOp &op, const std::string &construct);

// `redomap(op, neutral, r1, r2, ...) body`: evaluates body for every point of
// the range nest and combines the values with op, starting from neutral.
struct RedomapExpr : Expr {
  static constexpr Kind kKind = Kind::Redomap;
  RedomapExpr() : Expr(kKind) {}
  ReduceOp op;
  ExprPtr neutral;
  std::vector<Range> ranges;
  ExprPtr body;
};

// ------------------------------------------------------------ statements ---

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct Stmt {
  enum class Kind : uint8_t { Decl, Assign, Scan, For, Parfor, If, Return, Call, Block };
  const Kind kind;
  SourceRange range;

  explicit Stmt(Kind kind) : kind(kind) {}
  virtual ~Stmt() = default;

  template <typename T> T *as() { return kind == T::kKind ? static_cast<T *>(this) : nullptr; }
  template <typename T> const T *as() const {
    return kind == T::kKind ? static_cast<const T *>(this) : nullptr;
  }
};

struct BlockStmt : Stmt {
  static constexpr Kind kKind = Kind::Block;
  BlockStmt() : Stmt(kKind) {}
  std::vector<StmtPtr> stmts;
  bool isUnsafe = false; // `unsafe { ... }`: its indices go unchecked in generated code
};

// `let x = e;`, `var x: T = e;`, `var a: f32[N][M];` (arrays start zeroed;
// a scalar `var` without initializer starts at zero too).
struct DeclStmt : Stmt {
  static constexpr Kind kKind = Kind::Decl;
  DeclStmt() : Stmt(kKind) {}
  VarDeclPtr var; // kind Let or Var; its type is set by Sema when omitted
  bool hasExplicitType = false;
  ExprPtr init; // null for `var x: T;`
};

enum class AssignOp : uint8_t { Assign, Add, Sub, Mul, Div, Rem, Combine };

// `x = e;`, `A[i][j] += e;`. Compound forms read then write the same place.
// `combine(op) H[k] = e;` (AssignOp::Combine) is `H[k] = H[k] op e` as one
// indivisible step: the iterations of a parfor may combine into the same
// element (a histogram), in any order.
struct AssignStmt : Stmt {
  static constexpr Kind kKind = Kind::Assign;
  AssignStmt() : Stmt(kKind) {}
  std::string target;
  std::vector<ExprPtr> indices; // empty for a scalar
  AssignOp op = AssignOp::Assign;
  ReduceOp combineOp; // for AssignOp::Combine
  ExprPtr value;
  SourceRange targetRange;
  VarDecl *decl = nullptr; // set by Sema
};

// `scan(op, neutral, i in lo..hi) Y[k] = e;`, an inclusive scan: for each i in
// order, Y[k] = neutral op e(lo) op ... op e(i). op is associative, so the
// iterations may run in parallel: k must differ for every i, and e may not
// read Y (Sema checks both).
struct ScanStmt : Stmt {
  static constexpr Kind kKind = Kind::Scan;
  ScanStmt() : Stmt(kKind) {}
  ReduceOp op;
  ExprPtr neutral;
  std::vector<Range> ranges; // one (the checker refuses more), a vector for the nest helpers
  std::unique_ptr<AssignStmt> write; // `Y[k] = e`, its value the scanned body
};

struct ForStmt : Stmt {
  static constexpr Kind kKind = Kind::For;
  ForStmt() : Stmt(kKind) {}
  Range range;
  std::unique_ptr<BlockStmt> body;
};

// `parfor i in .., j in .. { }`: a nest whose iterations are independent.
struct ParforStmt : Stmt {
  static constexpr Kind kKind = Kind::Parfor;
  ParforStmt() : Stmt(kKind) {}
  std::vector<Range> ranges; // outermost first
  std::unique_ptr<BlockStmt> body;
};

struct IfStmt : Stmt {
  static constexpr Kind kKind = Kind::If;
  IfStmt() : Stmt(kKind) {}
  ExprPtr cond;
  std::unique_ptr<BlockStmt> thenBody;
  StmtPtr elseBody; // null, a BlockStmt, or another IfStmt
};

struct ReturnStmt : Stmt {
  static constexpr Kind kKind = Kind::Return;
  ReturnStmt() : Stmt(kKind) {}
  ExprPtr value;
};

struct KernelDecl;

// A kernel invoked from another kernel: `gemm(A, B, C);`. Array arguments are
// passed by reference (whole arrays, by name); scalars by value.
struct CallStmt : Stmt {
  static constexpr Kind kKind = Kind::Call;
  CallStmt() : Stmt(kKind) {}
  std::string callee;
  std::vector<ExprPtr> args;
  KernelDecl *kernel = nullptr; // set by Sema
};

// ---------------------------------------------------------- top level ---

// How a kernel's float multiply-adds round (docs/language.md, "Floating
// point"): a product written as an operand of a sum fused with it, rounded
// once (On, the default), or every product rounded before it is added (Off,
// C's -ffp-contract=off).
enum class FpContract { On, Off };

// `@name(arg, ...)` before a kernel.
// One argument of a kernel attribute: a word (`off`) or an assignment
// (`register_tile=8`).
struct AttributeArg {
  std::string name;
  std::optional<std::string> value;
  SourceRange range;      // the whole argument
  SourceRange valueRange; // the value, when there is one
};

// `@name(args)` before a kernel.
struct Attribute {
  std::string name;
  std::vector<AttributeArg> args;
  SourceRange range;
  SourceRange nameRange;
};

// `kernel name(params) { body }`: an entry point. Array parameters carry
// their intent; size names appearing in parameter types are declared as
// `sizes` (type i64), bound at run time from the arrays passed.
struct KernelDecl {
  std::string name;
  bool isUnsafe = false; // `unsafe kernel`: its indices go unchecked in generated code
  std::vector<Attribute> attributes;
  // Set by Sema from `@fp_contract(...)`, else by the command line's
  // --fp-contract (PassChoiceOptions::applyFpContract); every engine follows it.
  FpContract fpContract = FpContract::On;
  bool fpContractWritten = false; // the kernel has `@fp_contract`
  // `@schedule(...)`'s choices that Sema found valid, in the order written.
  Schedule schedule;
  std::vector<VarDeclPtr> params;
  std::vector<VarDeclPtr> sizes; // set by Sema, in order of first appearance
  std::unique_ptr<BlockStmt> body;
  SourceRange range;
  SourceRange nameRange;
};

// `fn name(scalars) -> T { body }`: a scalar function, usable in expressions
// anywhere (including inside parfor). `assoc fn` may be a redomap operator:
// it then takes two parameters of its result type.
struct FnDecl {
  std::string name;
  bool associative = false;
  bool commutes = false; // set by Sema for an assoc fn used as an operator
  std::vector<VarDeclPtr> params;
  ScalarType result = ScalarType::F32;
  std::unique_ptr<BlockStmt> body;
  SourceRange range;
  SourceRange nameRange;
};

struct ImportDecl {
  std::string target;  // `linalg` or "./path.loop"
  bool isPath = false; // true for the string form
  SourceRange range;
};

// One parsed file.
struct Module {
  uint32_t file = 0;
  std::vector<ImportDecl> imports;
  std::vector<std::unique_ptr<KernelDecl>> kernels;
  std::vector<std::unique_ptr<FnDecl>> fns;
};

// A program: the main module and everything it imports, transitively, each
// file loaded once. Name lookup across modules is flat: every kernel and fn
// of every loaded module is visible (duplicates are an error).
struct Program {
  std::vector<std::unique_ptr<Module>> modules; // main module first
  KernelDecl *findKernel(const std::string &name) const;
  FnDecl *findFn(const std::string &name) const;
};

} // namespace loopc
