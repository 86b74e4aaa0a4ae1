//! Which cell styles make a number a date-time or a duration, as calamine decides it: a
//! built-in number format by its id, a custom one by scanning its code.

use crate::style;

/// The class of a built-in number format id (ECMA-376 18.8.30): 14-22, 45 and 47 are dates
/// and times of day, 46 (`[h]:mm:ss`) a duration.
pub fn builtin(id: &str) -> u8 {
    match id {
        "14" | "15" | "16" | "17" | "18" | "19" | "20" | "21" | "22" | "45" | "47" => {
            style::DATETIME
        }
        "46" => style::TIMEDELTA,
        _ => style::OTHER,
    }
}

/// The class of a custom number format code. calamine's reading of `*` (a fill, whose next
/// character is literal) changed between its releases: a code whose class depends on it is
/// [`style::UNKNOWN`], which leaves its numbers to fastexcel.
pub fn custom(code: &str) -> u8 {
    let with_fill = scan(code, true);
    if with_fill == scan(code, false) { with_fill } else { style::UNKNOWN }
}

/// Only the first section counts (up to `;`). Outside quotes and brackets, a date or time
/// letter makes a date-time (`a` starts an AM/PM marker, after which `p`, `m` and `/` do);
/// an elapsed-time bracket (`[h]`, `[mm]`, `[ss]`) makes a duration. `\` and `_` (and `*`,
/// when `fill` says so) make the next character literal.
fn scan(code: &str, fill: bool) -> u8 {
    let mut escaped = false;
    let mut quoted = false;
    let mut brackets = 0u8;
    let mut prev = ' ';
    let mut elapsed = false;
    let mut am_pm = false;
    for c in code.chars() {
        if escaped {
            escaped = false;
        } else if c == '_' || c == '\\' || (fill && c == '*') {
            escaped = true;
        } else if quoted {
            quoted = c != '"';
        } else if c == '"' {
            quoted = true;
        } else if c == ';' {
            return style::OTHER;
        } else if c == '[' {
            brackets = brackets.saturating_add(1);
        } else if c == ']' && brackets == 1 && elapsed {
            return style::TIMEDELTA;
        } else if c == ']' {
            brackets = brackets.saturating_sub(1);
        } else if brackets == 0 && !am_pm && matches!(c, 'a' | 'A') {
            am_pm = true;
        } else if brackets == 0
            && if am_pm {
                matches!(c, 'p' | 'm' | '/' | 'P' | 'M')
            } else {
                matches!(c.to_ascii_lowercase(), 'd' | 'm' | 'h' | 'y' | 's')
            }
        {
            return style::DATETIME;
        } else if !(elapsed && c.eq_ignore_ascii_case(&prev)) {
            elapsed = prev == '[' && matches!(c.to_ascii_lowercase(), 'm' | 'h' | 's');
        }
        prev = c;
    }
    style::OTHER
}
