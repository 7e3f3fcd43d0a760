//! Lua literals that load as exactly the data they were written from: the
//! modules evalua writes for people to keep in their project (`evalua
//! promote`'s goldens, `evalua synth`'s drafted cases). Strings keep every
//! byte (see [`bytes`]); keys are identifiers when they can be; objects' keys
//! come in a caller's order, then alphabetically.

use std::fmt::Write as _;

use serde_json::{Map, Value as Json};

const KEYWORDS: [&str; 22] = [
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in", "local", "nil",
    "not", "or", "repeat", "return", "then", "true", "until", "while",
];

/// A Lua string literal that loads as exactly `s`.
pub fn string(s: &str) -> String {
    bytes(s.as_bytes())
}

/// A Lua string literal that loads as exactly `bytes`. Printable ASCII and
/// valid UTF-8 stay as they are; a control byte is `\ddd` with three digits
/// (`\1` followed by a digit would read as another byte), an invalid UTF-8
/// byte too; C1 controls and bidirectional formatting characters are
/// `\u{…}`, so the file shows what it holds (no text reordered in an editor).
pub fn bytes(bytes: &[u8]) -> String {
    let mut o = String::with_capacity(bytes.len() + 2);
    o.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                '\n' => o.push_str("\\n"),
                '\r' => o.push_str("\\r"),
                '\t' => o.push_str("\\t"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    let _ = write!(o, "\\{:03}", c as u32);
                }
                c if ('\u{80}'..='\u{9f}').contains(&c)
                    || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}') =>
                {
                    let _ = write!(o, "\\u{{{:x}}}", c as u32);
                }
                c => o.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(o, "\\{b:03}");
        }
    }
    o.push('"');
    o
}

/// A table key: the identifier itself when it is one, else `["…"]`.
pub fn key(k: &str) -> String {
    let ident = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&k);
    if ident { k.to_string() } else { format!("[{}]", string(k)) }
}

/// `v` as a Lua value at `indent` (two spaces a level), objects' keys in
/// `order` first; `null` in an object is left out (nil).
pub fn value(v: &Json, indent: usize, order: &[&str], out: &mut String) {
    let pad = "  ".repeat(indent);
    match v {
        Json::Null => out.push_str("nil"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(&n.to_string()),
        Json::String(s) => out.push_str(&string(s)),
        Json::Array(a) if a.iter().all(|x| !x.is_array() && !x.is_object()) => {
            let items: Vec<String> = a
                .iter()
                .map(|x| {
                    let mut s = String::new();
                    value(x, 0, order, &mut s);
                    s
                })
                .collect();
            let one = format!("{{ {} }}", items.join(", "));
            if one.len() <= 100 || items.is_empty() {
                out.push_str(if items.is_empty() { "{}" } else { &one });
            } else {
                out.push_str("{\n");
                for s in items {
                    let _ = writeln!(out, "{pad}  {s},");
                }
                let _ = write!(out, "{pad}}}");
            }
        }
        Json::Array(a) => {
            out.push_str("{\n");
            for x in a {
                let _ = write!(out, "{pad}  ");
                value(x, indent + 1, order, out);
                out.push_str(",\n");
            }
            let _ = write!(out, "{pad}}}");
        }
        Json::Object(o) => {
            out.push_str("{\n");
            for (k, x) in ordered(o, order) {
                if x.is_null() {
                    continue;
                }
                let _ = write!(out, "{pad}  {} = ", key(k));
                value(x, indent + 1, order, out);
                out.push_str(",\n");
            }
            let _ = write!(out, "{pad}}}");
        }
    }
}

fn ordered<'a>(o: &'a Map<String, Json>, order: &[&str]) -> Vec<(&'a String, &'a Json)> {
    let mut v: Vec<(&String, &Json)> = o.iter().collect();
    v.sort_by_key(|(k, _)| (order.iter().position(|x| x == k).unwrap_or(order.len()), k.to_string()));
    v
}
