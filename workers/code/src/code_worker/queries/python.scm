; Definitions: @def.<LABEL> is the node a symbol spans, @name its name. A FUNCTION whose
; nearest enclosing definition is a class becomes a METHOD (languages/base.py).
(function_definition name: (identifier) @name) @def.FUNCTION
(class_definition name: (identifier) @name) @def.CLASS

; Imports: the statement nodes; languages/python.py reads their parts.
(import_statement) @import
(import_from_statement) @import

; Calls: the callee expression is interpreted by the language module.
(call function: (_) @callee) @call
