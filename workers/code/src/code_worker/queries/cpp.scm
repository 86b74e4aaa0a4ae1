; Functions: the declarator's name may be qualified (`void ns::C::m()`), a field name
; (a method defined in its class), a destructor or an operator.
(function_definition declarator: (function_declarator declarator: [(identifier) (qualified_identifier) (field_identifier) (destructor_name) (operator_name)] @name)) @def.FUNCTION
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (qualified_identifier) (field_identifier)] @name))) @def.FUNCTION
(function_definition declarator: (reference_declarator (function_declarator declarator: [(identifier) (qualified_identifier) (field_identifier)] @name))) @def.FUNCTION
(class_specifier name: (type_identifier) @name body: (field_declaration_list)) @def.CLASS
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @def.STRUCT
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @def.STRUCT
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @def.ENUM
(type_definition declarator: (type_identifier) @name) @def.TYPE
(alias_declaration name: (type_identifier) @name) @def.TYPE
; A namespace is a scope: its members are named ns::f, it has no node of its own.
(namespace_definition name: (namespace_identifier) @name) @scope

(preproc_include) @import

(call_expression function: (_) @callee) @call
