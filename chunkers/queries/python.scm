; Python definitions. Decorators come from the decorated_definition wrapper (see rules.py).
(class_definition
  name: (identifier) @name) @definition.class

(function_definition
  name: (identifier) @name) @definition.function
