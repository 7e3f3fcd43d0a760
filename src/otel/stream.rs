//! A JSON document's top-level array read one element at a time, and a
//! record's cost in memory told from its bytes before it is parsed.
//!
//! A file of many small values (`[0,0,0,…]`, 256 MB) parsed whole into
//! `serde_json::Value`s cost about 40 times its size (a 32-byte value per
//! two bytes of input, plus the arrays): the cap on a file's bytes said
//! nothing of the memory. Elements are handed on as raw slices of the input,
//! and a record holding more values than [`MAX_RECORD_VALUES`] is not parsed.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// A record (a line, an array's element, a trajectory) with more JSON
/// values than this is not parsed: at about 100 bytes a parsed value, a
/// quarter of a GiB at most.
pub const MAX_RECORD_VALUES: usize = 2_500_000;

/// How many JSON values `bytes` holds, at least (every value but the first
/// follows a `,`, `:`, `[` or `{` outside a string); counted up to `limit`.
pub fn values_in(bytes: &[u8], limit: usize) -> usize {
    let (mut n, mut in_str, mut esc) = (1usize, false, false);
    for &b in bytes {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b',' | b'[' | b'{' => {
                n += 1;
                if n > limit {
                    return n;
                }
            }
            _ => {}
        }
    }
    n
}

/// Call `f` with each element of the JSON array `bytes` is (index, raw
/// element), one at a time; Err(why) when `bytes` is not an array of JSON
/// values. `f`'s own error stops the walk and is returned as Ok(Err(e)).
pub fn each_element<E>(
    bytes: &[u8],
    f: &mut dyn FnMut(usize, &RawValue) -> Result<(), E>,
) -> Result<Result<(), E>, serde_json::Error> {
    struct Walk<'f, E> {
        f: &'f mut dyn FnMut(usize, &RawValue) -> Result<(), E>,
        stopped: Option<E>,
    }
    impl<'de, E> Visitor<'de> for &mut Walk<'_, E> {
        type Value = ();
        fn expecting(&self, out: &mut fmt::Formatter) -> fmt::Result {
            out.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut i = 0;
            while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                if let Err(e) = (self.f)(i, raw) {
                    self.stopped = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
                i += 1;
            }
            Ok(())
        }
    }
    impl<'de, E> DeserializeSeed<'de> for &mut Walk<'_, E> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    let mut walk = Walk { f, stopped: None };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let out = (&mut walk).deserialize(&mut de).and_then(|()| de.end());
    match (walk.stopped, out) {
        (Some(e), _) => Ok(Err(e)),
        (None, Ok(())) => Ok(Ok(())),
        (None, Err(e)) => Err(e),
    }
}

/// A set of record numbers as bits: a file of 100 million bad records costs
/// 12 MB here, where a hash set of them cost gigabytes.
#[derive(Debug, Default)]
pub struct Bits {
    words: Vec<u64>,
    count: usize,
}

impl Bits {
    pub fn insert(&mut self, i: usize) {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        if self.words[w] & b == 0 {
            self.words[w] |= b;
            self.count += 1;
        }
    }
    pub fn contains(&self, i: &usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Why a record is not parsed when it holds too many values for its memory
/// to stay bounded.
pub fn dense(rec: &[u8]) -> Option<String> {
    let max = MAX_RECORD_VALUES;
    (values_in(rec, max) > max).then(|| format!("more than {max} JSON values in one record"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_come_one_at_a_time_and_values_are_counted_outside_strings() {
        let mut seen = Vec::new();
        let r = each_element::<String>(br#" [1, {"a": [2, 3]}, "x,[{"] "#, &mut |i, raw| {
            seen.push((i, raw.get().to_string()));
            Ok(())
        });
        assert!(matches!(r, Ok(Ok(()))));
        assert_eq!(seen, [(0, "1".into()), (1, r#"{"a": [2, 3]}"#.into()), (2, r#""x,[{""#.into())]);
        let stop = each_element(b"[1,2,3]", &mut |i, _| if i == 1 { Err("enough") } else { Ok(()) });
        assert!(matches!(stop, Ok(Err("enough"))));
        assert!(each_element::<()>(b"{\"a\": 1}", &mut |_, _| Ok(())).is_err());
        assert!(each_element::<()>(b"[1, 2", &mut |_, _| Ok(())).is_err());
        assert_eq!(values_in(br#"{"a": [1, 2, "3,4\",["], "b": {}}"#, 100), 7);
        assert_eq!(values_in(b"[0,0,0,0,0,0]", 3), 4);
        let mut b = Bits::default();
        b.insert(3);
        b.insert(700);
        b.insert(3);
        assert!(b.contains(&3) && b.contains(&700) && !b.contains(&4) && !b.contains(&10_000));
        assert_eq!(b.len(), 2);
    }
}
