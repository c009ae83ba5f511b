; TypeScript (and TSX) definitions. `export`, `declare` and decorators are attached in rules.py.
(class_declaration
  name: (_) @name) @definition.class

(abstract_class_declaration
  name: (_) @name) @definition.class

(interface_declaration
  name: (_) @name) @definition.interface

(enum_declaration
  name: (_) @name) @definition.enum

(type_alias_declaration
  name: (_) @name) @definition.type

(internal_module
  name: (_) @name) @definition.namespace

(module
  name: (_) @name) @definition.namespace

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(function_signature
  name: (identifier) @name) @definition.function

(class_body
  (method_definition
    name: (_) @name) @definition.method)

(class_body
  (abstract_method_signature
    name: (_) @name) @definition.method)

(class_body
  (public_field_definition
    name: (_) @name
    value: [(arrow_function) (function_expression)]) @definition.method)

; const handler = () => {...}
(program
  [(lexical_declaration
     (variable_declarator
       name: (identifier) @name
       value: [(arrow_function) (function_expression) (generator_function)]))
   (variable_declaration
     (variable_declarator
       name: (identifier) @name
       value: [(arrow_function) (function_expression) (generator_function)]))] @definition.function)

(export_statement
  declaration: (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: [(arrow_function) (function_expression) (generator_function)])) @definition.function)

(statement_block
  (export_statement
    declaration: (lexical_declaration
      (variable_declarator
        name: (identifier) @name
        value: [(arrow_function) (function_expression)])) @definition.function))
