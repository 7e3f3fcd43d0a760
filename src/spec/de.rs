//! How the spec types read the tables the DSL normalised (`lua::load::from_table`
//! hands them to serde): the few rules a Lua table needs that serde's own do not
//! give, declared once and named by the fields that use them
//! (`#[serde(deserialize_with = "de::…")]`).
//!
//! - A count may arrive as a Lua float (`3.0`): [`count`] takes a whole,
//!   non-negative number in range, whatever its Lua type.
//! - An amount ([`amount`]) is finite and non-negative.
//! - An empty Lua table is a map to serde, and stays one when serde buffers it
//!   (an internally tagged enum, as agents and users are): [`list`] takes it as
//!   an empty list.
//! - The DSL's own keys on a table it normalised (`_where`, the `kind = "model"`
//!   mark) are fields of the type too, each with its doc comment; the keys a
//!   suite may write are the type's fields without its `DSL_KEYS`.

use serde::{Deserialize, Deserializer, de};

/// The largest count a suite may give: what a Lua float holds exactly.
pub const MAX_COUNT: f64 = 9_007_199_254_740_992.0; // 2^53

/// A type a count is read into, with the largest value a suite may give it.
pub trait Count: Sized {
    const MAX: f64;
    fn from_whole(v: f64) -> Self;
}

impl Count for u32 {
    const MAX: f64 = u32::MAX as f64;
    fn from_whole(v: f64) -> Self {
        v as u32
    }
}

impl Count for u64 {
    const MAX: f64 = MAX_COUNT;
    fn from_whole(v: f64) -> Self {
        v as u64
    }
}

/// An optional count: an integer, or a float with no fraction (`3.0`), from
/// 0 to `T::MAX` (at most 2^53).
pub fn count<'de, D: Deserializer<'de>, T: Count>(d: D) -> Result<Option<T>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        None => Ok(None),
        Some(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= T::MAX => Ok(Some(T::from_whole(v))),
        Some(v) => Err(de::Error::custom(format_args!("must be a whole number from 0 to {}, got {v}", T::MAX))),
    }
}

/// A count the table holds (when it holds none, the field's default applies).
pub fn whole<'de, D: Deserializer<'de>, T: Count>(d: D) -> Result<T, D::Error> {
    count(d)?.ok_or_else(|| de::Error::custom("must be a whole number, got nil"))
}

/// A value that stays in Lua (free data such as a case's `metadata`, an
/// index the DSL keeps beside a list): the key is known, its value is not
/// read. Through mlua's deserializer it is not even walked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InLua;

impl<'de> Deserialize<'de> for InLua {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = InLua;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            // mlua hands over the value's own deserializer, left unread.
            fn visit_newtype_struct<D: Deserializer<'de>>(self, _: D) -> Result<InLua, D::Error> {
                Ok(InLua)
            }
        }
        d.deserialize_newtype_struct("InLua", V)
    }
}

/// An optional amount: a finite, non-negative number.
pub fn amount<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        Some(v) if !v.is_finite() || v < 0.0 => {
            Err(de::Error::custom(format_args!("must be a finite non-negative number, got {v}")))
        }
        v => Ok(v),
    }
}

/// A list, where an empty Lua table (a map to serde) is the empty list.
struct List<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<List<T>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(List(out))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<List<T>, A::Error> {
                match map.next_key::<de::IgnoredAny>()? {
                    None => Ok(List(Vec::new())),
                    Some(_) => Err(de::Error::invalid_type(de::Unexpected::Map, &self)),
                }
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A list (`{}` is the empty one).
pub fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    List::deserialize(d).map(|l| l.0)
}

/// An optional list (`{}` is the empty one).
pub fn opt_list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    Option::<List<T>>::deserialize(d).map(|l| l.map(|l| l.0))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    struct T {
        #[serde(default, deserialize_with = "super::count")]
        n: Option<u32>,
        #[serde(default, deserialize_with = "super::count")]
        big: Option<u64>,
        #[serde(default, deserialize_with = "super::amount")]
        usd: Option<f64>,
    }

    fn read(s: &str) -> Result<T, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }

    #[test]
    fn a_count_takes_a_whole_float_and_refuses_a_fraction_a_negative_and_too_much() {
        assert_eq!(read(r#"{"n": 3.0}"#).unwrap().n, Some(3));
        assert_eq!(read(r#"{"n": 3}"#).unwrap().n, Some(3));
        assert_eq!(read(r#"{}"#).unwrap().n, None);
        assert_eq!(read(r#"{"n": null}"#).unwrap().n, None);
        assert!(read(r#"{"n": 3.5}"#).unwrap_err().contains("whole number"));
        assert!(read(r#"{"n": -1}"#).unwrap_err().contains("whole number"));
        assert!(read(r#"{"n": 4294967296}"#).unwrap_err().contains("4294967295"));
        assert_eq!(read(r#"{"big": 9007199254740992}"#).unwrap().big, Some(1 << 53));
        assert!(read(r#"{"big": 9007199254740994}"#).is_err());
        assert!(read(r#"{"n": "3"}"#).is_err());
    }

    #[test]
    fn an_amount_is_finite_and_not_negative() {
        assert_eq!(read(r#"{"usd": 0.5}"#).unwrap().usd, Some(0.5));
        assert!(read(r#"{"usd": -0.5}"#).unwrap_err().contains("non-negative"));
    }
}
