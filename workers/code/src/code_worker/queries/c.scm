; The function's name sits inside its declarator (behind pointers for `int *f(void)`).
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def.FUNCTION
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @def.FUNCTION
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @def.FUNCTION
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @def.STRUCT
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @def.STRUCT
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @def.ENUM
(type_definition declarator: (type_identifier) @name) @def.TYPE

(preproc_include) @import

(call_expression function: (_) @callee) @call
