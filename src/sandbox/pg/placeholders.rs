//! SQL rewriting: SQLite's `?` placeholders as PostgreSQL's `$n`.

use std::borrow::Cow;

/// `?` and `?NNN` placeholders as `$n`, outside string literals, quoted
/// identifiers, comments and dollar quotes. A statement that already uses
/// `$n` is left alone (so PostgreSQL's `?` jsonb operators stay usable).
pub fn placeholders(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut next = 1u32;
    let mut i = 0;
    let mut last = 0;
    let mut changed = false;
    let ident_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    while i < b.len() {
        match b[i] {
            b'\'' => {
                // E'…' strings take backslash escapes.
                let escapes = i > 0 && (b[i - 1] == b'E' || b[i - 1] == b'e') && (i < 2 || !ident_char(b[i - 2]));
                i += 1;
                while i < b.len() {
                    if escapes && b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'$' if i == 0 || !ident_char(b[i - 1]) => {
                if b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                    return Cow::Borrowed(sql); // already PostgreSQL's own placeholders
                }
                // A dollar quote: $tag$ … $tag$.
                let start = i;
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' {
                    let tag = &sql[start..=j];
                    match sql[j + 1..].find(tag) {
                        Some(end) => i = j + 1 + end + tag.len(),
                        None => i = b.len(),
                    }
                } else {
                    i += 1;
                }
            }
            b'?' => {
                out.push_str(&sql[last..i]);
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                if j > i + 1 {
                    let n: u32 = sql[i + 1..j].parse().unwrap_or(next);
                    out.push_str(&format!("${n}"));
                    next = next.max(n + 1);
                } else {
                    out.push_str(&format!("${next}"));
                    next += 1;
                }
                changed = true;
                i = j;
                last = i;
            }
            _ => i += 1,
        }
    }
    if !changed {
        return Cow::Borrowed(sql);
    }
    out.push_str(&sql[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_marks_become_dollar_placeholders_outside_quotes_and_comments() {
        assert_eq!(placeholders("SELECT 1"), "SELECT 1");
        assert_eq!(placeholders("INSERT INTO t VALUES (?, ?, ?)"), "INSERT INTO t VALUES ($1, $2, $3)");
        assert_eq!(placeholders("SELECT ?2, ?1"), "SELECT $2, $1");
        assert_eq!(
            placeholders("SELECT '?', \"a?\", ? -- what?\n, E'\\'?', ? /* ? /* ? */ */, $$?$$, $x$?$x$, ?"),
            "SELECT '?', \"a?\", $1 -- what?\n, E'\\'?', $2 /* ? /* ? */ */, $$?$$, $x$?$x$, $3"
        );
        assert_eq!(placeholders("SELECT 'it''s ?', ?"), "SELECT 'it''s ?', $1");
        // PostgreSQL's own placeholders: the jsonb `?` operator stays.
        assert_eq!(placeholders("SELECT doc ? 'k' FROM t WHERE id = $1"), "SELECT doc ? 'k' FROM t WHERE id = $1");
        assert!(matches!(placeholders("SELECT 1 WHERE 'a' = 'a'"), Cow::Borrowed(_)));
    }
}
