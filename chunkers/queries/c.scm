; C definitions. A typedef around a struct/enum/union comes with it (rules.py wrappers).
(function_definition
  declarator: (function_declarator declarator: (_) @name)) @definition.function

(function_definition
  declarator: (_ (function_declarator declarator: (_) @name))) @definition.function

(function_definition
  declarator: (_ (_ (function_declarator declarator: (_) @name)))) @definition.function

(struct_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.struct

(union_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.union

(enum_specifier
  name: (type_identifier) @name
  body: (enumerator_list)) @definition.enum

(type_definition
  type: [(struct_specifier !name body: (field_declaration_list))
         (enum_specifier !name body: (enumerator_list))
         (union_specifier !name body: (field_declaration_list))]
  declarator: (type_identifier) @name) @definition.struct

(preproc_function_def
  name: (identifier) @name) @definition.macro
