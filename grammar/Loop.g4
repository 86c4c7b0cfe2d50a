// The .loop language. docs/language.md is the reference; this grammar is the
// syntax only: names, types, shapes and races are checked in src/sema.
grammar Loop;

program : importDecl* topDecl* EOF ;

// `import linalg;` loads stdlib/linalg.loop; `import "./util.loop";` is
// relative to the importing file.
importDecl : 'import' (ID | STRING) ';' ;

topDecl
  : attribute* UNSAFE? 'kernel' ID '(' paramList? ')' block       # kernelDecl
  | ASSOC? 'fn' ID '(' paramList? ')' '->' scalarType block       # fnDecl
  ;

// `@fp_contract(off)` before a kernel: a choice of how it is compiled
// (Sema knows the names and their arguments).
attribute : '@' ID '(' (attributeArg (',' attributeArg)*)? ')' ;
attributeArg : ID ('=' (ID | INT))? ;

paramList : param (',' param)* ;
param : ID ':' intent? type ;
intent : 'in' | 'out' | 'inout' ;

type : scalarType ('[' expr ']')* ;
scalarType : 'i32' | 'i64' | 'f32' | 'f64' | 'bool' ;

block : '{' stmt* '}' ;

stmt
  : 'let' ID (':' type)? '=' expr ';'                             # letStmt
  | 'var' ID (':' type)? ('=' expr)? ';'                          # varStmt
  | lvalue assignOp expr ';'                                      # assignStmt
  | 'combine' '(' reduceOp ')' lvalue '=' expr ';'                # combineStmt
  | 'scan' '(' reduceOp ',' expr ',' range (',' range)* ')' lvalue '=' expr ';' # scanStmt
  | 'for' range block                                             # forStmt
  | 'parfor' range (',' range)* block                             # parforStmt
  | ifStatement                                                   # ifStmt
  | 'return' expr ';'                                             # returnStmt
  | ID '(' argList? ')' ';'                                       # callStmt
  | UNSAFE? block                                                 # blockStmt
  ;

ifStatement : 'if' expr block ('else' (ifStatement | block))? ;

lvalue : ID ('[' expr ']')* ;
assignOp : '=' | '+=' | '-=' | '*=' | '/=' | '%=' ;

// `i in lo..hi` is the half-open range [lo, hi); `by s` gives a positive step.
range : ID 'in' expr '..' expr ('by' expr)? ;

argList : expr (',' expr)* ;

// Alternatives are listed from the tightest binding to the loosest. The body
// of a redomap extends as far to the right as possible, like a lambda.
expr
  : primary                                                       # primaryExpr
  | op=('-' | '!') expr                                           # unaryExpr
  | expr op=('*' | '/' | '%') expr                                # binaryExpr
  | expr op=('+' | '-') expr                                      # binaryExpr
  | expr op=('<' | '<=' | '>' | '>=') expr                        # binaryExpr
  | expr op=('==' | '!=') expr                                    # binaryExpr
  | expr op='&&' expr                                             # binaryExpr
  | expr op='||' expr                                             # binaryExpr
  | <assoc=right> expr '?' expr ':' expr                          # conditionalExpr
  | 'redomap' '(' reduceOp ',' expr ',' range (',' range)* ')' expr # redomapExpr
  ;

reduceOp : '+' | '*' | '&&' | '||' | ID ;

primary
  : INT                                                           # intLiteral
  | FLOAT                                                         # floatLiteral
  | ('true' | 'false')                                            # boolLiteral
  | 'inf'                                                         # infLiteral
  | ID ('[' expr ']')+                                            # indexExpr
  | ID '(' argList? ')'                                           # callExpr
  | scalarType '(' expr ')'                                       # castExpr
  | ID                                                            # nameExpr
  | '(' expr ')'                                                  # parenExpr
  ;

ASSOC : 'assoc' ;
// `unsafe kernel ...` and `unsafe { ... }`: indices left unchecked in the
// generated code (docs/language.md, "Run-time errors").
UNSAFE : 'unsafe' ;
ID : [a-zA-Z_] [a-zA-Z_0-9]* ;
// A float needs digits after the dot, so `0..N` lexes as 0, .., N.
FLOAT : [0-9]+ '.' [0-9]+ EXPONENT? | [0-9]+ EXPONENT ;
INT : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;
STRING : '"' ~["\r\n]* '"' ;
LINE_COMMENT : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS : [ \t\r\n]+ -> skip ;
// Operators of C that loopc lacks, lexed whole so that a syntax error can say
// so (SyntaxErrors.cpp) instead of, for `x << 3`, "expected an expression
// after '<'". No valid program has these characters outside comments and
// strings ('&&', '||' are longer matches), so nothing valid lexes otherwise.
SHIFT_OP : '<<' | '>>' ;
BITWISE_OP : '&' | '|' | '^' | '~' ;
// Any other character becomes a token the parser rejects, so the error is
// reported by the parser with a location rather than by the lexer.
UNKNOWN_CHAR : . ;
