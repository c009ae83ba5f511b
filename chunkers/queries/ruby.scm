; Ruby definitions.
(class
  name: (_) @name) @definition.class

(singleton_class
  value: (_) @name) @definition.class

(module
  name: (_) @name) @definition.module

(method
  name: (_) @name) @definition.method

(singleton_method
  name: (_) @name) @definition.singleton_method
