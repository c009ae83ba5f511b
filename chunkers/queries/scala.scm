; Scala definitions (2 and 3). Annotations are part of the definition node.
(class_definition
  name: (_) @name) @definition.class

(object_definition
  name: (_) @name) @definition.object

(trait_definition
  name: (_) @name) @definition.trait

(enum_definition
  name: (_) @name) @definition.enum

(function_definition
  name: (_) @name) @definition.function

(function_declaration
  name: (_) @name) @definition.function

(given_definition
  name: (_) @name) @definition.object

(extension_definition) @definition.extension @name
