; Swift: class_declaration covers class, struct, enum, actor and extension.
(class_declaration
  declaration_kind: "struct"
  name: (_) @name) @definition.struct

(class_declaration
  declaration_kind: "enum"
  name: (_) @name) @definition.enum

(class_declaration
  declaration_kind: "extension"
  name: (_) @name) @definition.extension

(class_declaration
  name: (_) @name) @definition.class

(protocol_declaration
  name: (_) @name) @definition.protocol

(function_declaration
  name: (_) @name) @definition.function

(protocol_function_declaration
  name: (_) @name) @definition.method

(init_declaration
  "init" @name) @definition.method

(deinit_declaration
  "deinit" @name) @definition.method

(subscript_declaration
  "subscript" @name) @definition.method
