; Objective-C definitions. Method names are selectors, assembled in rules.py.
(class_interface
  . (identifier) @name) @definition.interface

(class_implementation
  . (identifier) @name) @definition.implementation

(protocol_declaration
  . (identifier) @name) @definition.protocol

(method_definition
  (identifier) @name) @definition.method

(function_definition
  declarator: (function_declarator declarator: (_) @name)) @definition.function

(function_definition
  declarator: (_ (function_declarator declarator: (_) @name))) @definition.function

(struct_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.struct

(preproc_function_def
  name: (identifier) @name) @definition.macro
