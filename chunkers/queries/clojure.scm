; Clojure: the head symbol of a top-level list says what it defines.
(list_lit
  .
  (sym_lit) @_kw
  .
  (sym_lit name: (sym_name) @name)
  (#any-of? @_kw "defn" "defn-" "defmulti" "defmemo" "defnk")) @definition.function

(list_lit
  .
  (sym_lit) @_kw
  .
  (sym_lit name: (sym_name) @name)
  (#eq? @_kw "defmethod")) @definition.method

(list_lit
  .
  (sym_lit) @_kw
  .
  (sym_lit name: (sym_name) @name)
  (#eq? @_kw "defmacro")) @definition.macro

(list_lit
  .
  (sym_lit) @_kw
  .
  (sym_lit name: (sym_name) @name)
  (#any-of? @_kw "defprotocol" "definterface")) @definition.protocol

(list_lit
  .
  (sym_lit) @_kw
  .
  (sym_lit name: (sym_name) @name)
  (#any-of? @_kw "defrecord" "deftype")) @definition.record
