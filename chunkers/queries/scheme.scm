; Scheme: (define (name args) ...), (define name (lambda ...)), define-syntax, records.
(list
  .
  (symbol) @_kw
  .
  (list . (symbol) @name)
  (#any-of? @_kw "define" "define*" "define-public" "define-inline" "define-integrable")) @definition.function

(list
  .
  (symbol) @_kw
  .
  (symbol) @name
  .
  (list . (symbol) @_lambda)
  (#any-of? @_kw "define" "define-public")
  (#any-of? @_lambda "lambda" "case-lambda" "lambda*")) @definition.function

(list
  .
  (symbol) @_kw
  .
  [(symbol) @name (list . (symbol) @name)]
  (#any-of? @_kw "define-syntax" "define-macro" "define-syntax-rule")) @definition.macro

(list
  .
  (symbol) @_kw
  .
  (symbol) @name
  (#any-of? @_kw "define-record-type" "define-class")) @definition.record

(list
  .
  (symbol) @_kw
  .
  (list) @name
  (#eq? @_kw "define-module")) @definition.module
