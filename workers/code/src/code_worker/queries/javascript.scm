(function_declaration name: (identifier) @name) @def.FUNCTION
(generator_function_declaration name: (identifier) @name) @def.FUNCTION
(class_declaration name: (identifier) @name) @def.CLASS
(method_definition name: (_) @name) @def.FUNCTION
; const f = () => {} / const f = function () {}
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.FUNCTION

(import_statement) @import

(call_expression function: (_) @callee) @call
