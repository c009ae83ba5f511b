; C# definitions. Attributes ([HttpGet]) are inside the declaration node.
(namespace_declaration
  name: (_) @name) @definition.namespace

(class_declaration
  name: (identifier) @name) @definition.class

(interface_declaration
  name: (identifier) @name) @definition.interface

(struct_declaration
  name: (identifier) @name) @definition.struct

(record_declaration
  name: (identifier) @name) @definition.record

(enum_declaration
  name: (identifier) @name) @definition.enum

(method_declaration
  name: (identifier) @name) @definition.method

(constructor_declaration
  name: (identifier) @name) @definition.method

(destructor_declaration
  name: (identifier) @name) @definition.method

(operator_declaration
  "operator" @name) @definition.method

(local_function_statement
  name: (identifier) @name) @definition.function
