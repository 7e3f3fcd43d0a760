//! Untrusted text made inert for the sink it is written to: one function per
//! sink, used everywhere that sink writes text an agent, a trace, a run dir
//! or a suite chose (issue 45; report.html has its own, `report::html::esc`).
//!
//! - [`console`]: a terminal and a CI runner's log (the console summary,
//!   progress, warnings, `evalua show`, the Action's log). One line: no raw
//!   newline or carriage return (an agent could forge a harness line), no ESC
//!   or BEL or other control character (`ESC ] 0 ; … BEL` retitles a terminal,
//!   `ESC [ 2 J` clears it; C1 controls such as U+009B are escapes too on some
//!   terminals), no bidirectional override (text shown in another order than
//!   it is), and no line a GitHub runner takes for a workflow command
//!   (`::set-output …::`, `::add-mask::`, `##[group]`, also after spaces).
//! - [`markdown`]: GitHub-flavoured Markdown (the pull-request comment, and
//!   the comparison report.md shares with it). Inline text that opens
//!   nothing: what could open a link, an image, an HTML tag (`<details>`), a
//!   code span or a closing fence, a table cell or math is a numeric character
//!   reference, and a word joiner (U+2060, invisible) follows `@`, `#` and a
//!   scheme's `:` (`https://`) and splits `www.`, so no mention, issue
//!   reference or autolink forms. Emphasis is left alone: it opens nothing.

use std::fmt::Write;

/// Bidirectional formatting characters: shown escaped, never applied.
fn bidi(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}')
}

/// One line for a terminal or a CI log, shown as is but inert (see the module).
pub fn console(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => o.push(' '),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\u{1b}' => o.push_str("\\e"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(o, "\\x{:02x}", c as u32);
            }
            c if ('\u{80}'..='\u{9f}').contains(&c) || bidi(c) => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    let head = o.trim_start();
    if head.starts_with("::") || head.starts_with("##[") {
        o.insert(0, '\\');
    }
    o
}

/// Inline GitHub Markdown showing `s` as text (see the module); one line.
/// The characters that open something are numeric character references,
/// which Markdown and HTML both show as the character and never parse: the
/// text is inert in a paragraph, a table cell, a `<code>` element and in an
/// HTML block such as `<details>`'s summary alike.
pub fn markdown(s: &str) -> String {
    const JOINER: char = '\u{2060}';
    let line = console(s);
    let mut o = String::with_capacity(line.len() + 8);
    let chars: Vec<char> = line.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, '\\' | '`' | '[' | ']' | '<' | '>' | '|' | '&' | '$') {
            let _ = write!(o, "&#{};", c as u32);
        } else {
            o.push(c);
        }
        let www = (c == 'w' || c == 'W')
            && i >= 2
            && chars[i - 2..=i].iter().all(|x| x.eq_ignore_ascii_case(&'w'))
            && chars.get(i + 1) == Some(&'.');
        let scheme = c == ':' && chars.get(i + 1) == Some(&'/') && chars.get(i + 2) == Some(&'/');
        if matches!(c, '@' | '#') || scheme || www {
            o.push(JOINER);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_text_has_no_control_character_and_starts_no_workflow_command() {
        let agent = "boom\u{1b}]0;pwned\u{7}\u{1b}[2J\r\nPASS all gates\u{9b}31m\u{202e}txt.exe\u{0}";
        let shown = console(agent);
        assert_eq!(shown, "boom\\e]0;pwned\\x07\\e[2J\\r\\nPASS all gates\\u{9b}31m\\u{202e}txt.exe\\x00");
        assert!(shown.chars().all(|c| !c.is_control() && !bidi(c)), "{shown:?}");
        for cmd in ["::add-mask::x", "  ::set-output name=a::b", "##[group]x", "\t::error::x"] {
            let s = console(cmd);
            assert!(!s.trim_start().starts_with("::") && !s.trim_start().starts_with("##["), "{s}");
        }
        assert_eq!(console("refund: 3 of 4 accepted, ok"), "refund: 3 of 4 accepted, ok");
    }

    #[test]
    fn markdown_text_opens_nothing() {
        let evil = "@octocat #12 ![x](https://evil.example/p.png) [y](javascript:alert(1)) <details open><img src=x> \
                    ``` </details> | cell | **b** _i_ ~s~ :smile: www.evil.example $x$ &lt;\n# head";
        let md = markdown(evil);
        assert!(!md.contains('\n'));
        for opener in ['[', ']', '<', '>', '`', '|', '$', '\\'] {
            assert!(!md.contains(opener), "{opener}: {md}");
        }
        assert!(!md.replace("&#", "").contains('&'), "{md}");
        for broken in ["@\u{2060}octocat", "#\u{2060}12", "https:\u{2060}//", "www\u{2060}.evil"] {
            assert!(md.contains(broken), "{broken}: {md}");
        }
        assert_eq!(markdown("refund_2 (a.b): **x**"), "refund_2 (a.b): **x**");
    }
}
