// The state shared by the parts of the semantic checker, private to
// src/sema. One Checker walks a whole program; its member functions are
// defined by concern:
//   Sema.cpp               the top-level order of the checks;
//   Declarations.cpp       the kernel and function registry, scopes and name
//                          lookup, signatures (parameters and sizes), and
//                          recursion;
//   ExprChecker.cpp        expression typing: names, calls, builtins,
//                          operators, redomap, and the typing of literals;
//   StmtChecker.cpp        bodies and statements: declarations, assignments,
//                          loops and ranges, conditions and returns;
//   KernelCallChecker.cpp  kernel calls: arguments against parameters,
//                          shapes against the callee's sizes, aliasing.
// The checker keeps going after an error: an erroneous expression gets a
// poison type that silences the errors that would only follow from it.
#pragma once

#include "frontend/Ast.h"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace loopc::sema {

// The type of an expression while it is being checked. A tree made only of
// literals (`2`, `-1`, `2 * 0.5`) has no type of its own yet: it is flexible,
// and takes the type its context asks for when it is finalized. Poison marks
// an expression that already produced an error.
struct Ty {
  enum class Kind : uint8_t { Known, IntLiteral, FloatLiteral, Poison };
  Kind kind = Kind::Poison;
  ScalarType scalar = ScalarType::I64;

  static Ty known(ScalarType scalar) { return {Kind::Known, scalar}; }
  static Ty intLiteral() { return {Kind::IntLiteral, ScalarType::I64}; }
  static Ty floatLiteral() { return {Kind::FloatLiteral, ScalarType::F64}; }
  static Ty poison() { return {Kind::Poison, ScalarType::I64}; }

  bool isPoison() const { return kind == Kind::Poison; }
  bool isKnown() const { return kind == Kind::Known; }
  bool isFlexible() const { return kind == Kind::IntLiteral || kind == Kind::FloatLiteral; }
  bool is(ScalarType type) const { return isKnown() && scalar == type; }
  bool isNumeric() const { return isFlexible() || (isKnown() && scalar != ScalarType::Bool); }
  // A float literal or a known type other than an integer type.
  bool cannotBeInteger() const {
    return kind == Kind::FloatLiteral || (isKnown() && !isInteger(scalar));
  }
};

std::string quoted(std::string_view name);
// How a type reads in a message: "'i32'", "an integer literal", ...
std::string describe(Ty type);
// "; convert explicitly, e.g. i64(...)" where a known type of `got` cannot
// become `wanted`; nothing for a literal, which has no type to convert from.
std::string conversionHint(ScalarType wanted, Ty got);
// Why `var` cannot be written to; with `advice`, also what would make it
// writable where that is in the user's hands.
std::string immutableReason(const VarDecl &var, bool advice);
// " takes 2 arguments, got 3", to follow the callee's description.
std::string argumentCountMismatch(size_t expected, size_t got);

// "; did you mean 'x'?" for the closest candidate within a small edit
// distance of a misspelt name, or nothing.
std::string suggestion(const std::string &name, std::vector<std::string> candidates);

// What a builtin accepts: its number of arguments, and whether they must be
// floats (the others take any integer or float type).
struct BuiltinSignature {
  Builtin builtin;
  size_t arity;
  bool floatOnly;
};

std::optional<BuiltinSignature> findBuiltin(std::string_view name);

using Scope = std::unordered_map<std::string, VarDecl *>;

// What a kernel call learns about the callee's sizes (KernelCallChecker.cpp).
struct SizeBindings;

class Checker {
public:
  Checker(Program &program, DiagnosticEngine &diagnostics,
          const ScheduleChoiceCheck &checkChoice = {})
      : program_(program), diagnostics_(diagnostics), checkScheduleChoice_(checkChoice) {}

  // Checks the whole program; true when it has no error.
  bool run();

private:
  // Visits the functions and kernels of every module, module by module, in
  // the order they appear in the file.
  template <typename OnFn, typename OnKernel>
  void forEachInSourceOrder(OnFn onFn, OnKernel onKernel) {
    auto before = [](SourceRange a, SourceRange b) {
      return std::tie(a.begin.line, a.begin.col) < std::tie(b.begin.line, b.begin.col);
    };
    for (const auto &module : program_.modules) {
      auto fn = module->fns.begin();
      auto kernel = module->kernels.begin();
      while (fn != module->fns.end() || kernel != module->kernels.end()) {
        if (kernel == module->kernels.end() ||
            (fn != module->fns.end() && before((*fn)->range, (*kernel)->range)))
          onFn(**fn++);
        else
          onKernel(**kernel++);
      }
    }
  }

  // Declarations.cpp: globals, scopes, names, signatures, recursion.
  void collectGlobalNames();
  KernelDecl *findKernel(const std::string &name) const;
  FnDecl *findFn(const std::string &name) const;
  void pushScope() { scopes_.emplace_back(); }
  void popScope() { scopes_.pop_back(); }
  VarDecl *lookup(const std::string &name) const;
  void declare(VarDecl &var);
  void reportUnknownName(const std::string &name, SourceRange range);
  std::vector<std::string> visibleNames() const;
  std::vector<std::string> kernelNames() const;
  std::vector<std::string> functionNames() const;
  void declareParameter(Scope &scope, VarDecl &param);
  void declareKernelSignature(KernelDecl &kernel);
  void checkFnSignature(FnDecl &fn);
  void reportRecursion();
  // An `assoc fn` used as an operator is combined as one expression: its
  // body (and every function it calls) must be `let`s and one `return`.
  void checkOperatorBodies();

  // StmtChecker.cpp: bodies and statements.
  void checkKernel(KernelDecl &kernel);
  void checkAttributes(KernelDecl &kernel);
  void checkSchedule(KernelDecl &kernel, const Attribute &attribute);
  static std::optional<ScheduleError> stagedArrayError(const KernelDecl &kernel,
                                                       const ScheduleChoice &choice);
  void checkFnBody(FnDecl &fn);
  void checkBlock(BlockStmt &block);
  void checkStmt(Stmt &stmt);
  void checkDecl(DeclStmt &decl);
  void checkExtent(Expr &extent);
  void checkAssign(AssignStmt &assign);
  void checkCombine(AssignStmt &combine, const VarDecl &target, Ty value);
  // Whether `op` of `construct` (combine, scan) applies to `target`'s
  // elements; reports why not.
  bool checkOperatorOn(ReduceOp &op, const VarDecl &target, SourceRange targetRange,
                       const std::string &construct);
  void checkScan(ScanStmt &scan);
  void reportImmutable(const VarDecl &var, SourceRange range);
  void reportRankMismatch(const VarDecl &var, size_t indexCount, SourceRange range);
  void checkRange(Range &range);
  void checkFor(ForStmt &loop);
  void checkParfor(ParforStmt &parfor);
  void checkIf(IfStmt &ifStmt);
  void expectBool(Expr &expr, const std::string &what);
  void checkReturn(ReturnStmt &ret);

  // KernelCallChecker.cpp: kernel calls.
  void checkCallStmt(CallStmt &call);
  void checkKernelArgument(const KernelDecl &callee, const VarDecl &param, Expr &arg,
                           SizeBindings &bindings);

  // ExprChecker.cpp: expressions and literal typing.
  Ty checkExpr(Expr &expr);
  Ty checkIndex(Expr &index);
  // Records a known type on `expr` and returns it.
  Ty known(Expr &expr, ScalarType type);
  Ty withType(Expr &expr, Ty type);
  Ty checkName(NameExpr &name);
  Ty checkIndexExpr(IndexExpr &index);
  Ty checkCall(CallExpr &call);
  // Checks an argument that matches no parameter, so that its names are
  // still resolved; an array passed by name is fine there.
  void checkUnmatchedArgument(Expr &arg);
  void recordFnCall(FnDecl &callee, SourceRange range);
  Ty checkBuiltinCall(CallExpr &call, const BuiltinSignature &signature,
                      const std::vector<Ty> &args);
  Ty checkCast(CastExpr &cast);
  Ty checkUnary(UnaryExpr &unary);
  Ty checkBinary(BinaryExpr &binary);
  Ty checkConditional(ConditionalExpr &conditional);
  Ty checkRedomap(RedomapExpr &redomap);
  // A constant neutral element of + or * other than 0 or 1 (literals and
  // arithmetic on them): the lowering may
  // combine it in once per partial result, which for these operators (not
  // idempotent, unlike min, max, && and ||) changes the result.
  void checkConstantNeutral(const ReduceOp &op, const Expr &neutral, const std::string &construct);
  // The `assoc fn` a user operator of `construct` (redomap, combine) names,
  // or null (reported) when there is none or it is not associative.
  FnDecl *resolveUserOperator(ReduceOp &op, const std::string &construct);
  Ty unify(Expr &lhsExpr, Ty lhs, Expr &rhsExpr, Ty rhs, const char *what);
  bool coerce(Expr &expr, Ty type, ScalarType wanted);
  ScalarType settle(Expr &expr, Ty type);
  void finalize(Expr &expr, ScalarType type, bool negated = false);

  Program &program_;
  DiagnosticEngine &diagnostics_;
  const ScheduleChoiceCheck checkScheduleChoice_; // the passes' vocabulary (Sema.h)
  std::unordered_map<std::string, SourceRange> globalRanges_;
  std::unordered_map<std::string, KernelDecl *> kernels_;
  std::unordered_map<std::string, FnDecl *> fns_;
  // The parameters (and, for a kernel, the sizes) each body starts with.
  std::map<const KernelDecl *, Scope> kernelScopes_;
  std::map<const FnDecl *, Scope> fnScopes_;
  std::vector<Scope> scopes_;
  std::unordered_set<const VarDecl *> poisoned_;
  KernelDecl *currentKernel_ = nullptr;
  FnDecl *currentFn_ = nullptr;
  int parforDepth_ = 0;
  bool checkingSignature_ = false; // checking the extents of kernel parameters
  std::map<FnDecl *, std::vector<std::pair<FnDecl *, SourceRange>>> fnCalls_;
  std::map<KernelDecl *, std::vector<std::pair<KernelDecl *, SourceRange>>> kernelCalls_;
  struct OperatorUse {
    FnDecl *fn;
    SourceRange range;
    std::string construct; // "redomap", "scan", "combine"
  };
  std::vector<OperatorUse> operatorUses_;
};

} // namespace loopc::sema
