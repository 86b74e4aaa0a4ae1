(function_declaration name: (identifier) @name) @def.FUNCTION
; A method's scope is its receiver's type (languages/golang.py names it Type.Method).
(method_declaration name: (field_identifier) @name) @def.METHOD
(type_spec name: (type_identifier) @name type: (struct_type)) @def.STRUCT
(type_spec name: (type_identifier) @name type: (interface_type)) @def.INTERFACE
(type_spec name: (type_identifier) @name type: [(type_identifier) (qualified_type) (pointer_type) (slice_type) (map_type) (array_type) (function_type) (channel_type) (generic_type)]) @def.TYPE
(type_alias name: (type_identifier) @name) @def.TYPE
; A package-level `var f = func(…) {…}` is a function all the same (tests and hooks write
; them); one inside a function is a closure, a local variable.
(source_file (var_declaration (var_spec name: (identifier) @name value: (expression_list . (func_literal) .)) @def.FUNCTION))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name value: (expression_list . (func_literal) .)) @def.FUNCTION)))

(import_spec) @import

(call_expression function: (_) @callee) @call
