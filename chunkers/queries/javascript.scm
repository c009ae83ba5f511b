; JavaScript definitions. `export` and decorators are attached in rules.py.
(class_declaration
  name: (_) @name) @definition.class

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(class_body
  (method_definition
    name: (_) @name) @definition.method)

(class_body
  (field_definition
    property: (_) @name
    value: [(arrow_function) (function_expression)]) @definition.method)

; const handler = () => {...}; const Widget = class {...}
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

(program
  (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: (class)) @definition.class))
