(function_declaration name: (identifier) @name) @def.FUNCTION
(generator_function_declaration name: (identifier) @name) @def.FUNCTION
(class_declaration name: (identifier) @name) @def.CLASS
(method_definition name: (_) @name) @def.FUNCTION
; const f = () => {} / const f = function () {}
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.FUNCTION
; CommonJS: exports.f = function () {} / module.exports.f = () => {}
(assignment_expression
  left: (member_expression
    object: (identifier) @_text.exports
    property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]) @def.FUNCTION
(assignment_expression
  left: (member_expression
    object: (member_expression
      object: (identifier) @_text.module
      property: (property_identifier) @_text.exports)
    property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]) @def.FUNCTION

(import_statement) @import
; CommonJS: require("./x"), one string argument. A capture named _text.X must read X
; (symbols.py checks it: a text predicate cannot run on a tree parsed from a callback)
(call_expression
  function: (identifier) @_text.require
  arguments: (arguments . (string) .)) @import

(call_expression function: (_) @callee) @call
