; Elixir: definitions are macro calls (defmodule, def, defp, defmacro, ...). @doc/@spec/@impl
; above a definition come with it (rules.py).
(call
  target: (identifier) @_kw
  (arguments . (alias) @name)
  (#any-of? @_kw "defmodule" "defimpl")) @definition.module

(call
  target: (identifier) @_kw
  (arguments . (alias) @name)
  (#eq? @_kw "defprotocol")) @definition.protocol

(call
  target: (identifier) @_kw
  (arguments
    .
    [(call target: (identifier) @name)
     (identifier) @name
     (binary_operator left: (call target: (identifier) @name))])
  (#any-of? @_kw "def" "defp" "defdelegate" "defguard" "defguardp" "defn" "defnp")) @definition.function

(call
  target: (identifier) @_kw
  (arguments
    .
    [(call target: (identifier) @name)
     (identifier) @name
     (binary_operator left: (call target: (identifier) @name))])
  (#any-of? @_kw "defmacro" "defmacrop")) @definition.macro
