; Racket: defines, structs, syntax rules, classes and (sub)modules.
(list
  .
  (symbol) @_kw
  .
  (list . (symbol) @name)
  (#any-of? @_kw "define" "define/contract" "define/public" "define/private" "define/override"
    "define/augment" "define/pubment" "define-values")) @definition.function

(list
  .
  (symbol) @_kw
  .
  (symbol) @name
  .
  (list . (symbol) @_lambda)
  (#any-of? @_kw "define" "define/contract")
  (#any-of? @_lambda "lambda" "λ" "case-lambda")) @definition.function

(list
  .
  (symbol) @_kw
  .
  [(symbol) @name (list . (symbol) @name)]
  (#any-of? @_kw "define-syntax" "define-syntax-rule" "define-simple-macro" "define-syntax-parser")) @definition.macro

(list
  .
  (symbol) @_kw
  .
  (symbol) @name
  (#any-of? @_kw "struct" "define-struct")) @definition.struct

(list
  .
  (symbol) @_kw
  .
  (symbol) @name
  (#any-of? @_kw "module" "module+" "module*")) @definition.module

(list
  .
  (symbol) @_kw
  .
  (symbol) @name
  .
  (list . (symbol) @_class)
  (#eq? @_kw "define")
  (#any-of? @_class "class" "class*" "mixin")) @definition.class
