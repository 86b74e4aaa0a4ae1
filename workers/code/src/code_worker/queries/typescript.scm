(function_declaration name: (identifier) @name) @def.FUNCTION
(generator_function_declaration name: (identifier) @name) @def.FUNCTION
(class_declaration name: (type_identifier) @name) @def.CLASS
(abstract_class_declaration name: (type_identifier) @name) @def.CLASS
(method_definition name: (_) @name) @def.FUNCTION
(method_signature name: (_) @name) @def.FUNCTION
(abstract_method_signature name: (_) @name) @def.FUNCTION
(interface_declaration name: (type_identifier) @name) @def.INTERFACE
(type_alias_declaration name: (type_identifier) @name) @def.TYPE
(enum_declaration name: (identifier) @name) @def.ENUM
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.FUNCTION

(import_statement) @import

(call_expression function: (_) @callee) @call
