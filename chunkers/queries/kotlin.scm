; Kotlin definitions. Annotations sit in `modifiers`, inside the node. The first matching
; pattern wins, so the interface pattern comes before the generic class one.
(class_declaration
  "interface"
  (type_identifier) @name) @definition.interface

(class_declaration
  (type_identifier) @name) @definition.class

(object_declaration
  (type_identifier) @name) @definition.object

(companion_object
  "companion" @name) @definition.object

(function_declaration
  (simple_identifier) @name) @definition.function

(secondary_constructor
  "constructor" @name) @definition.method
