(class_declaration name: (identifier) @name) @def.CLASS
(record_declaration name: (identifier) @name) @def.CLASS
(interface_declaration name: (identifier) @name) @def.INTERFACE
(annotation_type_declaration name: (identifier) @name) @def.INTERFACE
(enum_declaration name: (identifier) @name) @def.ENUM
(method_declaration name: (identifier) @name) @def.METHOD
(constructor_declaration name: (identifier) @name) @def.METHOD

(import_declaration) @import

(method_invocation) @call
