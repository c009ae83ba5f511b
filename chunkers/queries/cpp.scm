; C++ definitions. `template <...>` comes with what it declares (rules.py wrappers).
(namespace_definition
  name: (_) @name) @definition.namespace

(class_specifier
  name: (_) @name
  body: (field_declaration_list)) @definition.class

(struct_specifier
  name: (_) @name
  body: (field_declaration_list)) @definition.struct

(union_specifier
  name: (_) @name
  body: (field_declaration_list)) @definition.union

(enum_specifier
  name: (_) @name
  body: (enumerator_list)) @definition.enum

(function_definition
  declarator: (function_declarator declarator: (_) @name)) @definition.function

(function_definition
  declarator: (_ (function_declarator declarator: (_) @name))) @definition.function

(function_definition
  declarator: (_ (_ (function_declarator declarator: (_) @name)))) @definition.function

(type_definition
  type: [(struct_specifier !name body: (field_declaration_list))
         (enum_specifier !name body: (enumerator_list))]
  declarator: (type_identifier) @name) @definition.struct

(concept_definition
  name: (identifier) @name) @definition.type

(preproc_function_def
  name: (identifier) @name) @definition.macro
