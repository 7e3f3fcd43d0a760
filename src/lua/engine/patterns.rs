//! `string.find`, `string.match`, `string.gmatch` and `string.gsub` with
//! Lua 5.4's pattern semantics, bounded.
//!
//! Lua's own matcher is C: it backtracks without ever executing a VM
//! instruction, so the instruction hook cannot stop it, and a pattern like
//! `(".-"):rep(5) .. "b"` on 30,000 characters runs for hours. This is a
//! line-by-line port of Lua 5.4's `lstrlib.c` matcher (same classes, anchors,
//! captures, `%b`, `%f`, back-references, recursion limit and error
//! messages) that counts its steps and, every [`CHECK_EVERY`] steps, stops
//! with "time limit exceeded" once the running code's deadline (published by
//! the Lua limits, see `util::watch`) has passed, or with "pattern too
//! complex" after [`MAX_STEPS`] steps when no deadline applies.

use mlua::{Function, Lua, MultiValue, Table, Value};

use crate::util::watch;

/// Steps between two looks at the deadline.
const CHECK_EVERY: u64 = 1 << 14;
/// Steps allowed when no deadline applies (host code calling Lua unguarded).
const MAX_STEPS: u64 = 1 << 34;
/// Lua's MAXCCALLS for patterns: how deep the matcher may recurse.
const MAXCCALLS: u32 = 200;
/// Lua's LUA_MAXCAPTURES.
const MAXCAPTURES: usize = 32;
const ESC: u8 = b'%';
const SPECIALS: &[u8] = b"^$*+?.([%-";

#[derive(Clone, Copy, Debug, PartialEq)]
enum CapLen {
    Unfinished,
    Position,
    Len(usize),
}

#[derive(Clone, Copy)]
struct Capture {
    init: usize,
    len: CapLen,
}

/// The state of one match (Lua's MatchState), over byte offsets.
struct Matcher<'a> {
    src: &'a [u8],
    pat: &'a [u8],
    depth: u32,
    level: usize,
    capture: [Capture; MAXCAPTURES],
    steps: u64,
}

type R<T> = Result<T, String>;

fn class_matches(c: u8, cl: u8) -> bool {
    let res = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'g' => c.is_ascii_graphic(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0, // deprecated in Lua 5.2, still there in 5.4
        _ => return cl == c,
    };
    if cl.is_ascii_uppercase() { !res } else { res }
}

impl<'a> Matcher<'a> {
    fn new(src: &'a [u8], pat: &'a [u8]) -> Self {
        Matcher {
            src,
            pat,
            depth: MAXCCALLS,
            level: 0,
            capture: [Capture { init: 0, len: CapLen::Unfinished }; MAXCAPTURES],
            steps: 0,
        }
    }

    fn reset(&mut self) {
        self.level = 0;
        self.depth = MAXCCALLS;
    }

    /// The pattern byte at `i`, 0 past its end (C reads the terminating NUL).
    fn p(&self, i: usize) -> u8 {
        self.pat.get(i).copied().unwrap_or(0)
    }

    /// The subject byte at `i`, 0 past its end.
    fn s(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn step(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps & (CHECK_EVERY - 1) == 0 {
            if watch::overdue() {
                return Err("time limit exceeded (in a string pattern)".into());
            }
            if watch::deadline().is_none() && self.steps > MAX_STEPS {
                return Err("pattern too complex".into());
            }
        }
        Ok(())
    }

    fn check_capture(&self, l: u8) -> R<usize> {
        let l = l as i32 - b'1' as i32;
        if l < 0 || l as usize >= self.level || self.capture[l as usize].len == CapLen::Unfinished {
            return Err(format!("invalid capture index %{}", l + 1));
        }
        Ok(l as usize)
    }

    fn capture_to_close(&self) -> R<usize> {
        (0..self.level)
            .rev()
            .find(|&l| self.capture[l].len == CapLen::Unfinished)
            .ok_or_else(|| "invalid pattern capture".to_string())
    }

    fn class_end(&self, mut p: usize) -> R<usize> {
        let c = self.p(p);
        p += 1;
        match c {
            ESC => {
                if p >= self.pat.len() {
                    return Err("malformed pattern (ends with '%')".into());
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.p(p) == b'^' {
                    p += 1;
                }
                loop {
                    if p >= self.pat.len() {
                        return Err("malformed pattern (missing ']')".into());
                    }
                    let c = self.p(p);
                    p += 1;
                    if c == ESC && p < self.pat.len() {
                        p += 1;
                    }
                    if self.p(p) == b']' {
                        break;
                    }
                }
                Ok(p + 1)
            }
            _ => Ok(p),
        }
    }

    /// `p` at the '[', `ec` at the closing ']'.
    fn bracket_class(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let mut sig = true;
        if self.p(p + 1) == b'^' {
            sig = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= ec {
                break;
            }
            if self.p(p) == ESC {
                p += 1;
                if class_matches(c, self.p(p)) {
                    return sig;
                }
            } else if self.p(p + 1) == b'-' && p + 2 < ec {
                p += 2;
                if self.p(p - 2) <= c && c <= self.p(p) {
                    return sig;
                }
            } else if self.p(p) == c {
                return sig;
            }
        }
        !sig
    }

    fn single(&self, s: usize, p: usize, ep: usize) -> bool {
        if s >= self.src.len() {
            return false;
        }
        let c = self.src[s];
        match self.p(p) {
            b'.' => true,
            ESC => class_matches(c, self.p(p + 1)),
            b'[' => self.bracket_class(c, p, ep - 1),
            pc => pc == c,
        }
    }

    fn balance(&mut self, s: usize, p: usize) -> R<Option<usize>> {
        if p + 1 >= self.pat.len() {
            return Err("malformed pattern (missing arguments to '%b')".into());
        }
        if s >= self.src.len() || self.src[s] != self.p(p) {
            return Ok(None);
        }
        let (b, e) = (self.p(p), self.p(p + 1));
        let mut cont = 1;
        let mut s = s + 1;
        while s < self.src.len() {
            self.step()?;
            let c = self.src[s];
            if c == e {
                cont -= 1;
                if cont == 0 {
                    return Ok(Some(s + 1));
                }
            } else if c == b {
                cont += 1;
            }
            s += 1;
        }
        Ok(None)
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> R<Option<usize>> {
        let mut i = 0usize;
        while self.single(s + i, p, ep) {
            self.step()?;
            i += 1;
        }
        loop {
            if let Some(r) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(r));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> R<Option<usize>> {
        loop {
            if let Some(r) = self.do_match(s, ep + 1)? {
                return Ok(Some(r));
            }
            if self.single(s, p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: CapLen) -> R<Option<usize>> {
        if self.level >= MAXCAPTURES {
            return Err("too many captures".into());
        }
        self.capture[self.level] = Capture { init: s, len: what };
        self.level += 1;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.level -= 1;
        }
        Ok(r)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> R<Option<usize>> {
        let l = self.capture_to_close()?;
        self.capture[l].len = CapLen::Len(s - self.capture[l].init);
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.capture[l].len = CapLen::Unfinished;
        }
        Ok(r)
    }

    fn match_capture(&self, s: usize, l: u8) -> R<Option<usize>> {
        let l = self.check_capture(l)?;
        let len = match self.capture[l].len {
            CapLen::Len(n) => n,
            // A position capture has length 0 here, as in C (CAP_POSITION cast to size_t never fits).
            _ => return Ok(None),
        };
        let init = self.capture[l].init;
        if self.src.len() - s >= len && self.src[init..init + len] == self.src[s..s + len] {
            Ok(Some(s + len))
        } else {
            Ok(None)
        }
    }

    fn do_match(&mut self, s: usize, p: usize) -> R<Option<usize>> {
        if self.depth == 0 {
            return Err("pattern too complex".into());
        }
        self.depth -= 1;
        let r = self.match_body(s, p);
        self.depth += 1;
        r
    }

    fn match_body(&mut self, mut s: usize, mut p: usize) -> R<Option<usize>> {
        loop {
            self.step()?;
            if p >= self.pat.len() {
                return Ok(Some(s));
            }
            match self.p(p) {
                b'(' => {
                    return if self.p(p + 1) == b')' {
                        self.start_capture(s, p + 2, CapLen::Position)
                    } else {
                        self.start_capture(s, p + 1, CapLen::Unfinished)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == self.pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                ESC if self.p(p + 1) == b'b' => match self.balance(s, p + 2)? {
                    Some(e) => {
                        s = e;
                        p += 4;
                        continue;
                    }
                    None => return Ok(None),
                },
                ESC if self.p(p + 1) == b'f' => {
                    p += 2;
                    if self.p(p) != b'[' {
                        return Err("missing '[' after '%f' in pattern".into());
                    }
                    let ep = self.class_end(p)?;
                    let previous = if s == 0 { 0 } else { self.s(s - 1) };
                    if !self.bracket_class(previous, p, ep - 1) && self.bracket_class(self.s(s), p, ep - 1) {
                        p = ep;
                        continue;
                    }
                    return Ok(None);
                }
                ESC if self.p(p + 1).is_ascii_digit() => match self.match_capture(s, self.p(p + 1))? {
                    Some(e) => {
                        s = e;
                        p += 2;
                        continue;
                    }
                    None => return Ok(None),
                },
                _ => {
                    let ep = self.class_end(p)?;
                    let epc = self.p(ep);
                    if !self.single(s, p, ep) {
                        if epc == b'*' || epc == b'?' || epc == b'-' {
                            p = ep + 1;
                            continue;
                        }
                        return Ok(None);
                    }
                    match epc {
                        b'?' => {
                            if let Some(r) = self.do_match(s + 1, ep + 1)? {
                                return Ok(Some(r));
                            }
                            p = ep + 1;
                        }
                        b'+' => return self.max_expand(s + 1, p, ep),
                        b'*' => return self.max_expand(s, p, ep),
                        b'-' => return self.min_expand(s, p, ep),
                        _ => {
                            s += 1;
                            p = ep;
                        }
                    }
                }
            }
        }
    }

    /// Capture `i` of a match `s..e` (the whole match when there are none).
    fn capture_value(&self, lua: &Lua, i: usize, s: usize, e: usize) -> mlua::Result<Value> {
        if i >= self.level {
            if i != 0 {
                return Err(mlua::Error::runtime(format!("invalid capture index %{}", i + 1)));
            }
            return Ok(Value::String(lua.create_string(&self.src[s..e])?));
        }
        let c = self.capture[i];
        match c.len {
            CapLen::Unfinished => Err(mlua::Error::runtime("unfinished capture")),
            CapLen::Position => Ok(Value::Integer(c.init as i64 + 1)),
            CapLen::Len(n) => Ok(Value::String(lua.create_string(&self.src[c.init..c.init + n])?)),
        }
    }

    /// Every capture (the whole match when there are none and `whole`).
    fn captures(&self, lua: &Lua, s: usize, e: usize, whole: bool) -> mlua::Result<MultiValue> {
        let n = if self.level == 0 && whole { 1 } else { self.level };
        (0..n).map(|i| self.capture_value(lua, i, s, e)).collect()
    }
}

fn rt(e: String) -> mlua::Error {
    mlua::Error::runtime(e)
}

/// Argument `n` of function `f` as bytes (numbers are converted, as Lua does).
fn bytes_arg(lua: &Lua, v: Value, n: usize, f: &str) -> mlua::Result<mlua::LuaString> {
    let ty = v.type_name();
    match lua.coerce_string(v)? {
        Some(s) => Ok(s),
        None => Err(mlua::Error::runtime(format!("bad argument #{n} to '{f}' (string expected, got {ty})"))),
    }
}

/// Lua's posrelatI: a 1-based start position, negative from the end.
fn start_at(init: Option<i64>, len: usize) -> usize {
    let len = len as i64;
    let pos = match init.unwrap_or(1) {
        p if p > 0 => p,
        0 => 1,
        p if p < -len => 1,
        p => len + p + 1,
    };
    (pos - 1) as usize
}

fn no_specials(p: &[u8]) -> bool {
    !p.iter().any(|c| SPECIALS.contains(c))
}

fn find_aux(lua: &Lua, args: (Value, Value, Option<i64>, Option<Value>), find: bool) -> mlua::Result<MultiValue> {
    let name = if find { "find" } else { "match" };
    let s = bytes_arg(lua, args.0, 1, name)?;
    let p = bytes_arg(lua, args.1, 2, name)?;
    let (s, p) = (s.as_bytes(), p.as_bytes());
    let (s, p): (&[u8], &[u8]) = (&s, &p);
    let init = start_at(args.2, s.len());
    let fail = || Ok(MultiValue::from_iter([Value::Nil]));
    if init > s.len() {
        return fail();
    }
    let plain = args.3.is_some_and(|v| !matches!(v, Value::Nil | Value::Boolean(false)));
    if find && (plain || no_specials(p)) {
        let hit = if p.is_empty() { Some(0) } else { s[init..].windows(p.len()).position(|w| w == p) };
        return match hit {
            Some(i) => Ok(MultiValue::from_iter([
                Value::Integer((init + i + 1) as i64),
                Value::Integer((init + i + p.len()) as i64),
            ])),
            None => fail(),
        };
    }
    let anchor = p.first() == Some(&b'^');
    let pat = if anchor { &p[1..] } else { p };
    let mut m = Matcher::new(s, pat);
    let mut s1 = init;
    loop {
        m.reset();
        if let Some(e) = m.do_match(s1, 0).map_err(rt)? {
            if find {
                let mut out = MultiValue::from_iter([Value::Integer(s1 as i64 + 1), Value::Integer(e as i64)]);
                out.extend(m.captures(lua, 0, 0, false)?);
                return Ok(out);
            }
            return m.captures(lua, s1, e, true);
        }
        s1 += 1;
        if s1 > s.len() || anchor {
            return fail();
        }
    }
}

fn gmatch(lua: &Lua, (s, p, init): (Value, Value, Option<i64>)) -> mlua::Result<Function> {
    let s = bytes_arg(lua, s, 1, "gmatch")?;
    let p = bytes_arg(lua, p, 2, "gmatch")?;
    let len = s.as_bytes().len();
    let mut src = start_at(init, len);
    if src > len {
        src = len + 1;
    }
    let mut last: Option<usize> = None;
    lua.create_function_mut(move |lua, ()| {
        let (sb, pb) = (s.as_bytes(), p.as_bytes());
        let mut m = Matcher::new(&sb, &pb);
        while src <= len {
            m.reset();
            if let Some(e) = m.do_match(src, 0).map_err(rt)?
                && Some(e) != last
            {
                let start = src;
                src = e;
                last = Some(e);
                return m.captures(lua, start, e, true);
            }
            src += 1;
        }
        Ok(MultiValue::new())
    })
}

/// gsub's replacement string: `%0`–`%9`, `%%`.
fn add_string(lua: &Lua, m: &Matcher<'_>, out: &mut Vec<u8>, repl: &[u8], s: usize, e: usize) -> mlua::Result<()> {
    let mut i = 0;
    while i < repl.len() {
        let c = repl[i];
        i += 1;
        if c != ESC {
            out.push(c);
            continue;
        }
        let d = repl.get(i).copied().unwrap_or(0);
        i += 1;
        if d == ESC {
            out.push(ESC);
        } else if d == b'0' {
            out.extend_from_slice(&m.src[s..e]);
        } else if d.is_ascii_digit() {
            match m.capture_value(lua, (d - b'1') as usize, s, e)? {
                Value::String(v) => out.extend_from_slice(&v.as_bytes()),
                Value::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
                _ => {}
            }
        } else {
            return Err(mlua::Error::runtime("invalid use of '%' in replacement string"));
        }
    }
    Ok(())
}

fn gsub(lua: &Lua, (src, p, repl, max): (Value, Value, Value, Option<i64>)) -> mlua::Result<(Value, i64)> {
    let original = bytes_arg(lua, src, 1, "gsub")?;
    let p = bytes_arg(lua, p, 2, "gsub")?;
    enum Repl {
        Text(Vec<u8>),
        Fn(Function),
        Table(Table),
    }
    let repl = match repl {
        Value::String(r) => Repl::Text(r.as_bytes().to_vec()),
        v @ (Value::Integer(_) | Value::Number(_)) => {
            Repl::Text(lua.coerce_string(v)?.map(|s| s.as_bytes().to_vec()).unwrap_or_default())
        }
        Value::Function(f) => Repl::Fn(f),
        Value::Table(t) => Repl::Table(t),
        other => {
            return Err(mlua::Error::runtime(format!(
                "bad argument #3 to 'gsub' (string/function/table expected, got {})",
                other.type_name()
            )));
        }
    };
    let sb = original.as_bytes();
    let pb = p.as_bytes();
    let (s, p): (&[u8], &[u8]) = (&sb, &pb);
    let max_s = max.unwrap_or(s.len() as i64 + 1);
    let anchor = p.first() == Some(&b'^');
    let pat = if anchor { &p[1..] } else { p };
    let mut m = Matcher::new(s, pat);
    let mut out = Vec::with_capacity(s.len());
    let (mut at, mut n, mut changed) = (0usize, 0i64, false);
    let mut last: Option<usize> = None;
    while n < max_s {
        m.reset();
        match m.do_match(at, 0).map_err(rt)? {
            Some(e) if Some(e) != last => {
                n += 1;
                let value = match &repl {
                    Repl::Text(r) => {
                        add_string(lua, &m, &mut out, r, at, e)?;
                        changed = true;
                        None
                    }
                    Repl::Fn(f) => Some(f.call::<Value>(m.captures(lua, at, e, true)?)?),
                    Repl::Table(t) => Some(t.get::<Value>(m.capture_value(lua, 0, at, e)?)?),
                };
                if let Some(v) = value {
                    match v {
                        Value::Nil | Value::Boolean(false) => out.extend_from_slice(&s[at..e]),
                        v @ (Value::String(_) | Value::Integer(_) | Value::Number(_)) => {
                            let text = lua.coerce_string(v)?.map(|s| s.as_bytes().to_vec()).unwrap_or_default();
                            out.extend_from_slice(&text);
                            changed = true;
                        }
                        other => {
                            return Err(mlua::Error::runtime(format!(
                                "invalid replacement value (a {})",
                                other.type_name()
                            )));
                        }
                    }
                }
                at = e;
                last = Some(e);
            }
            _ if at < s.len() => {
                out.push(s[at]);
                at += 1;
            }
            _ => break,
        }
        if anchor {
            break;
        }
    }
    if !changed {
        return Ok((Value::String(original.clone()), n));
    }
    out.extend_from_slice(&s[at.min(s.len())..]);
    Ok((Value::String(lua.create_string(&out)?), n))
}

/// The four functions, to replace the string library's.
pub fn functions(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("find", lua.create_function(|lua, a| find_aux(lua, a, true))?)?;
    t.raw_set(
        "match",
        lua.create_function(|lua, (s, p, i): (Value, Value, Option<i64>)| find_aux(lua, (s, p, i, None), false))?,
    )?;
    t.raw_set("gmatch", lua.create_function(gmatch)?)?;
    t.raw_set("gsub", lua.create_function(gsub)?)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The port and Lua's own C matcher agree, on hand-picked and random patterns.
    #[test]
    fn agrees_with_lua() {
        let lua = Lua::new();
        let ours = functions(&lua).unwrap();
        let theirs: Table = lua.globals().get("string").unwrap();
        let mut cases: Vec<(String, String)> = [
            ("hello world", "o w"),
            ("hello world", "^(h)(.-)o"),
            ("  trim me  ", "^%s*(.-)%s*$"),
            ("key = value", "(%w+)%s*=%s*(%w+)"),
            ("THE (quick) fox", "%((%a+)%)"),
            ("f(a(b)c)d", "%b()"),
            ("THE (quick) fox", "%f[%a]%a+"),
            ("abcabc", "(abc)%1"),
            ("abc", "()b()"),
            ("a.b.c", "%."),
            ("x=1, y=22", "(%a)=(%d+)"),
            ("[tag]", "[%[%]]"),
            ("aaa", "a-b"),
            ("aaab", "a*b"),
            ("ab", "a?b"),
            ("", ""),
            ("abc", ""),
            ("abc", "$"),
            ("a\0b", "%z"),
            ("ñandú", "[\u{80}-\u{ff}]+"),
            ("abc", "[^a]"),
            ("a-b", "[a-]"),
            ("2024-01-02", "(%d+)-(%d+)-(%d+)"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let alphabet: &[&str] = &[
            "a", "b", ".", "%a", "%d", "[ab]", "[^a]", "(", ")", "*", "-", "+", "?", "^", "$", "%b()", "%f[%w]", "%1",
            "()",
        ];
        let mut rng = fastrand::Rng::with_seed(13);
        for _ in 0..4000 {
            let p: String = (0..rng.usize(1..7)).map(|_| alphabet[rng.usize(..alphabet.len())]).collect();
            let s: String = (0..rng.usize(0..12)).map(|_| ["a", "b", "1", "(", ")", " "][rng.usize(..6)]).collect();
            cases.push((s, p));
        }
        let call = |t: &Table, f: &str, args: MultiValue| -> String {
            let f: Function = t.get(f).unwrap();
            match f.call::<MultiValue>(args) {
                Ok(v) => format!("{:?}", v.iter().map(|x| x.to_string().unwrap_or_default()).collect::<Vec<_>>()),
                Err(_) => "error".to_string(),
            }
        };
        for (s, p) in &cases {
            let args = || {
                MultiValue::from_iter([
                    Value::String(lua.create_string(s).unwrap()),
                    Value::String(lua.create_string(p).unwrap()),
                ])
            };
            for f in ["find", "match"] {
                assert_eq!(call(&ours, f, args()), call(&theirs, f, args()), "{f}({s:?}, {p:?})");
            }
            let gs = |t: &Table| {
                let mut a = args();
                a.push_back(Value::String(lua.create_string("<%0>").unwrap()));
                call(t, "gsub", a)
            };
            assert_eq!(gs(&ours), gs(&theirs), "gsub({s:?}, {p:?})");
            let gm = |t: &Table| -> String {
                let f: Function = t.get("gmatch").unwrap();
                let Ok(it) = f.call::<Function>(args()) else { return "error".into() };
                let mut out = Vec::new();
                for _ in 0..50 {
                    match it.call::<MultiValue>(()) {
                        Ok(v) if v.is_empty() || v[0].is_nil() => break,
                        Ok(v) => out.push(format!(
                            "{:?}",
                            v.iter().map(|x| x.to_string().unwrap_or_default()).collect::<Vec<_>>()
                        )),
                        Err(_) => return "error".into(),
                    }
                }
                out.join(";")
            };
            assert_eq!(gm(&ours), gm(&theirs), "gmatch({s:?}, {p:?})");
        }
        // Function and table replacements, init positions, plain find, max replacements.
        let run = |t: &Table, code: &str| -> String {
            let f: Function = lua.load(code).eval().unwrap();
            f.call::<String>(t.clone()).unwrap_or_else(|e| format!("error: {e}"))
        };
        for code in [
            "return function(s) return s.gsub('hello world', '%w+', function(w) return w:upper() end) end",
            "return function(s) return s.gsub('$name is $age', '%$(%w+)', { name = 'Ann', age = 3 }) end",
            "return function(s) return s.gsub('abc', '', '-') end",
            "return function(s) return s.gsub('abc abc', 'b', 'X', 1) end",
            "return function(s) return tostring(s.find('a.b', '.', 1, true)) end",
            "return function(s) return tostring(s.find('abcabc', 'b', -3)) end",
            "return function(s) return tostring(s.find('abc', 'c', 10)) end",
            "return function(s) return s.gsub('hello', '(l)(l)', '%2%1') end",
            "return function(s) return s.gsub(12345, 3, 9) end",
        ] {
            assert_eq!(run(&ours, code), run(&theirs, code), "{code}");
        }
    }

    #[test]
    fn a_pattern_bomb_stops_at_the_deadline() {
        let lua = Lua::new();
        let ours = functions(&lua).unwrap();
        let find: Function = ours.get("find").unwrap();
        let started = std::time::Instant::now();
        let r = watch::with_deadline(started + std::time::Duration::from_millis(200), || {
            find.call::<Value>(("a".repeat(30000), ".-.-.-.-.-b"))
        });
        assert!(r.unwrap_err().to_string().contains("time limit exceeded"));
        // The bomb would run for ages; a bound far above the 200 ms deadline.
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
    }
}
