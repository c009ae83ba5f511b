; Common Lisp: defun/defmacro/defgeneric/defmethod have their own nodes; the rest are lists
; whose head symbol says what they define.
(list_lit
  (defun
    (defun_header
      keyword: (defun_keyword) @_kw
      function_name: (_) @name))
  (#eq? @_kw "defun")) @definition.function

(list_lit
  (defun
    (defun_header
      keyword: (defun_keyword) @_kw
      function_name: (_) @name))
  (#eq? @_kw "defmacro")) @definition.macro

(list_lit
  (defun
    (defun_header
      keyword: (defun_keyword) @_kw
      function_name: (_) @name))
  (#any-of? @_kw "defgeneric" "defmethod")) @definition.method

(list_lit
  .
  (sym_lit) @_kw
  .
  (sym_lit) @name
  (#any-of? @_kw "defclass" "define-condition")) @definition.class

(list_lit
  .
  (sym_lit) @_kw
  .
  [(sym_lit) @name (list_lit . (sym_lit) @name)]
  (#eq? @_kw "defstruct")) @definition.struct
