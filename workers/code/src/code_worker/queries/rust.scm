; Definitions (@def.<LABEL> + @name); an impl block is a scope without a node of its
; own (@scope, named by its type), so its functions become METHODs named Type::f.
(function_item name: (identifier) @name) @def.FUNCTION
(function_signature_item name: (identifier) @name) @def.FUNCTION
(struct_item name: (type_identifier) @name) @def.STRUCT
(union_item name: (type_identifier) @name) @def.STRUCT
(enum_item name: (type_identifier) @name) @def.ENUM
(trait_item name: (type_identifier) @name) @def.TRAIT
(type_item name: (type_identifier) @name) @def.TYPE
(mod_item name: (identifier) @name body: (declaration_list)) @def.MODULE
(impl_item type: (_) @name) @scope

; `use` declarations and `mod foo;` (a module in another file: an IMPORTS reference).
(use_declaration) @import
(mod_item name: (identifier) !body) @import

(call_expression function: (_) @callee) @call
