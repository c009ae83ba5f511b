; Dart: a method or function is a signature node followed by a sibling body, hence @end.
(class_definition
  name: (identifier) @name) @definition.class

(mixin_declaration
  (identifier) @name) @definition.mixin

(extension_declaration
  name: (identifier) @name) @definition.extension

(enum_declaration
  name: (identifier) @name) @definition.enum

(class_body
  (method_signature
    [(function_signature name: (identifier) @name)
     (getter_signature name: (identifier) @name)
     (setter_signature name: (identifier) @name)
     (constructor_signature name: (identifier) @name)
     (factory_constructor_signature (identifier) @name)
     (operator_signature)@name]) @definition.method
  .
  (function_body) @end)

(extension_body
  (method_signature
    [(function_signature name: (identifier) @name)
     (getter_signature name: (identifier) @name)
     (setter_signature name: (identifier) @name)]) @definition.method
  .
  (function_body) @end)

(program
  (function_signature
    name: (identifier) @name) @definition.function
  .
  (function_body) @end)

(program
  (getter_signature
    name: (identifier) @name) @definition.function
  .
  (function_body) @end)
