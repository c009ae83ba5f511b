; Groovy. The bundled grammar is loose (commands, units, blocks), so definitions are recognised
; by shape: a keyword unit followed by a named block, or a block opening with a call-like unit.
(command
  (unit (identifier) @_kw)
  .
  (block . (unit) @name)
  (#eq? @_kw "class")) @definition.class

(command
  (unit (identifier) @_kw)
  .
  (block . (unit) @name)
  (#any-of? @_kw "interface" "trait")) @definition.interface

(command
  (unit (identifier) @_kw)
  .
  (block . (unit) @name)
  (#eq? @_kw "enum")) @definition.enum

; Methods and constructors directly in a class body: `Type name(args) { ... }`.
(command
  (unit (identifier) @_kw)
  (block
    (command
      (block . (unit (func)) @name)) @definition.method)
  (#any-of? @_kw "class" "interface" "trait" "enum"))

; Top-level `def name(args) { ... }` / `Type name(args) { ... }`.
(source_file
  (command
    (block . (unit (func)) @name)) @definition.function)
