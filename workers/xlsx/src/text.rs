//! The small pieces of XML the scanner reads: tag names, attributes, text with entities.

use memchr::{memchr, memmem};

/// Why the scanner leaves a sheet to fastexcel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decline(pub &'static str);

pub(crate) struct TagEnd {
    /// Just past the tag's `>`.
    pub next: usize,
    pub self_closing: bool,
}

/// The name starting at `at` (just past a `<`) and where it ends (`/c` for `</c>`).
pub(crate) fn tag_name(data: &[u8], at: usize) -> (&[u8], usize) {
    let rest = data.get(at..).unwrap_or_default();
    let skip = usize::from(rest.first() == Some(&b'/'));
    let len = skip
        + rest[skip..]
            .iter()
            .position(|&b| b == b'>' || b == b'/' || b.is_ascii_whitespace())
            .unwrap_or(rest.len() - skip);
    (&rest[..len], at + len)
}

/// The `r`, `s` and `t` attributes of a tag (the only ones the scanner reads).
#[derive(Default)]
pub(crate) struct Attributes<'a> {
    pub r: Option<&'a [u8]>,
    pub s: Option<&'a [u8]>,
    pub t: Option<&'a [u8]>,
}

/// The attributes of a start tag from `at` (just past its name) to its end, read byte by
/// byte (they are short: a memchr per attribute costs more than it saves).
pub(crate) fn open_tag(data: &[u8], mut at: usize) -> Result<(Attributes<'_>, TagEnd), Decline> {
    let mut attrs = Attributes::default();
    loop {
        at = skip_space(data, at);
        match data.get(at) {
            None => return Err(Decline("a tag not closed")),
            Some(b'>') => return Ok((attrs, TagEnd { next: at + 1, self_closing: false })),
            Some(b'/') if data.get(at + 1) == Some(&b'>') => {
                return Ok((attrs, TagEnd { next: at + 2, self_closing: true }));
            }
            Some(_) => {}
        }
        let start = at;
        while let Some(&b) = data.get(at)
            && b != b'='
            && b != b'>'
            && b != b'/'
            && !b.is_ascii_whitespace()
        {
            at += 1;
        }
        let name = &data[start..at];
        at = skip_space(data, at);
        if data.get(at) != Some(&b'=') {
            return Err(Decline("an attribute without a value"));
        }
        at = skip_space(data, at + 1);
        let quote = match data.get(at) {
            Some(&q @ (b'"' | b'\'')) => q,
            _ => return Err(Decline("an attribute value without quotes")),
        };
        let from = at + 1;
        let Some(len) = data.get(from..).and_then(|rest| rest.iter().position(|&b| b == quote))
        else {
            return Err(Decline("an attribute value not closed"));
        };
        let value = &data[from..from + len];
        at = from + len + 1;
        let slot = match name {
            b"r" => &mut attrs.r,
            b"s" => &mut attrs.s,
            b"t" => &mut attrs.t,
            _ => continue,
        };
        if value.contains(&b'&') {
            return Err(Decline("an entity in a cell attribute"));
        }
        *slot = Some(value);
    }
}

pub(crate) fn skip_space(data: &[u8], mut at: usize) -> usize {
    while let Some(b) = data.get(at)
        && b.is_ascii_whitespace()
    {
        at += 1;
    }
    at
}

/// The next tag from `at`, only whitespace before it: (its name, just past the name);
/// None at the end of `data`.
pub(crate) fn next_tag(data: &[u8], at: usize) -> Result<Option<(&[u8], usize)>, Decline> {
    let at = skip_space(data, at);
    match data.get(at) {
        None => Ok(None),
        Some(b'<') => Ok(Some(tag_name(data, at + 1))),
        Some(_) => Err(Decline("text outside a value")),
    }
}

/// A cell reference (`AB12`) as a zero-based (row, column).
pub(crate) fn reference(place: &[u8]) -> Result<(u32, u16), Decline> {
    let letters = place.iter().take_while(|b| b.is_ascii_uppercase()).count();
    let digits = &place[letters..];
    if letters == 0 || letters > 3 || digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Decline("a cell reference of another form"));
    }
    let col = place[..letters].iter().fold(0u32, |acc, b| acc * 26 + u32::from(b - b'A' + 1));
    let row: u32 = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse().ok())
        .filter(|r| (1..=1_048_576).contains(r))
        .ok_or(Decline("a cell reference out of range"))?;
    if col > 16_384 {
        return Err(Decline("a cell reference out of range"));
    }
    Ok((row - 1, (col - 1) as u16))
}

/// A non-negative decimal index (a style or a shared string's).
pub(crate) fn index(digits: &[u8]) -> Result<usize, Decline> {
    if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Decline("an index that is not a plain number"));
    }
    Ok(digits.iter().fold(0usize, |acc, b| acc * 10 + usize::from(b - b'0')))
}

/// The text from `at` up to `close` (which must come next, no markup before it), and where
/// the scan goes on.
pub(crate) fn content<'a>(
    data: &'a [u8],
    at: usize,
    close: &[u8],
) -> Result<(&'a [u8], usize), Decline> {
    let Some(lt) = data[at..].iter().position(|&b| b == b'<') else {
        return Err(Decline("a value not closed"));
    };
    if !data[at + lt..].starts_with(close) {
        return Err(Decline("markup inside a value"));
    }
    Ok((&data[at..at + lt], at + lt + close.len()))
}

/// The text of a string item (`<si>` or `<is>`) from just past its start tag to its end tag
/// `</name>` (given as `/name`): every `<t>` of it in order, `<rPh>` (phonetic runs) left
/// out, run properties skipped; where the scan goes on.
pub(crate) fn rich_text(
    data: &[u8],
    mut at: usize,
    end: &[u8],
    out: &mut String,
) -> Result<usize, Decline> {
    let mut texts = 0;
    loop {
        let Some((name, after)) = next_tag(data, at)? else {
            return Err(Decline("a string item not closed"));
        };
        if name.first() == Some(&b'!') || name.first() == Some(&b'?') {
            return Err(Decline("a comment or instruction in a string item"));
        }
        let (_, tag) = open_tag(data, after)?;
        at = tag.next;
        if name == end {
            if texts == 0 {
                return Err(Decline("a string item without a text element"));
            }
            return Ok(at);
        }
        match name {
            b"t" => {
                if tag.self_closing {
                    return Err(Decline("an empty text element"));
                }
                let Some(lt) = memchr(b'<', &data[at..]) else {
                    return Err(Decline("a text element not closed"));
                };
                if !data[at + lt..].starts_with(b"</t>") {
                    return Err(Decline("markup inside a text element"));
                }
                decode_text(&data[at..at + lt], out)?;
                texts += 1;
                at += lt + b"</t>".len();
            }
            b"rPh" if !tag.self_closing => {
                let Some(close) = memmem::find(&data[at..], b"</rPh>") else {
                    return Err(Decline("a phonetic run not closed"));
                };
                at += close + b"</rPh>".len();
            }
            // <r>, </r>, <rPr> and its children, <phoneticPr/>: markup around the text.
            _ => {}
        }
    }
}

/// Element text with its entities decoded (the five XML ones and character references).
/// A carriage return (which XML parsers normalize) or an OOXML `_xHHHH_` escape declines.
pub(crate) fn decode_text(raw: &[u8], out: &mut String) -> Result<(), Decline> {
    if memchr(b'\r', raw).is_some() {
        return Err(Decline("a carriage return in text"));
    }
    if has_ooxml_escape(raw) {
        return Err(Decline("an _xHHHH_ escape in text"));
    }
    let mut at = 0;
    while at < raw.len() {
        let next = memchr(b'&', &raw[at..]).map_or(raw.len(), |n| at + n);
        let run = std::str::from_utf8(&raw[at..next]).map_err(|_| Decline("text that is not UTF-8"))?;
        out.push_str(run);
        if next == raw.len() {
            break;
        }
        let Some(semi) = memchr(b';', &raw[next..]) else {
            return Err(Decline("an entity not closed"));
        };
        let entity = &raw[next + 1..next + semi];
        out.push(match entity {
            b"lt" => '<',
            b"gt" => '>',
            b"amp" => '&',
            b"quot" => '"',
            b"apos" => '\'',
            _ => character_reference(entity)?,
        });
        at = next + semi + 1;
    }
    Ok(())
}

fn character_reference(entity: &[u8]) -> Result<char, Decline> {
    let (digits, radix) = match entity {
        [b'#', b'x' | b'X', hex @ ..] => (hex, 16),
        [b'#', dec @ ..] => (dec, 10),
        _ => return Err(Decline("an entity other than the XML five")),
    };
    std::str::from_utf8(digits)
        .ok()
        .filter(|d| !d.is_empty() && d.len() <= 8)
        .and_then(|d| u32::from_str_radix(d, radix).ok())
        .filter(|&c| c != 0x0D)
        .and_then(char::from_u32)
        .ok_or(Decline("a character reference out of range"))
}

/// `_x` + four hex digits + `_`, which OOXML readers may turn into a character.
fn has_ooxml_escape(raw: &[u8]) -> bool {
    let mut at = 0;
    while let Some(found) = memchr(b'_', &raw[at..]) {
        let pos = at + found;
        if let Some(candidate) = raw.get(pos..pos + 7) {
            if candidate[1] == b'x'
                && candidate[2..6].iter().all(u8::is_ascii_hexdigit)
                && candidate[6] == b'_'
            {
                return true;
            }
        } else {
            return false;
        }
        at = pos + 1;
    }
    false
}
