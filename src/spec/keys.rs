//! The keys a suite's tables may hold, read from the serde declarations of
//! the spec types themselves: the DSL (`host.fields`, `host.fault_kinds`),
//! the editor stubs in `types/` and the reference tables in
//! docs/reference/lua-api.md are checked against these (`lua::api::fields`),
//! so a field is declared once, on its struct.

use serde::Deserialize;
use serde::de::{self, Visitor};

/// The field names of a struct (or the variant names of a unit enum) as
/// serde deserialises them, in declaration order.
pub fn fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut found: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe { found: &mut found });
    found
}

/// What a spec type's fields do not say about the keys of its Lua table.
pub trait Keys {
    /// Fields the DSL writes on the table it normalised, which a suite does
    /// not (`_where`, a `kind` mark, a derived list).
    const DSL_KEYS: &'static [&'static str] = &[];
    /// Keys a suite writes that stay in Lua (a handler function) or that the
    /// DSL checks and drops: no field holds them.
    const LUA_KEYS: &'static [&'static str] = &[];
}

/// The keys a suite writes in a table of type `T`: its fields but its
/// `DSL_KEYS`, and its `LUA_KEYS`.
pub fn suite_keys<'de, T: Deserialize<'de> + Keys>() -> Vec<&'static str> {
    fields::<T>().iter().copied().filter(|f| !T::DSL_KEYS.contains(f)).chain(T::LUA_KEYS.iter().copied()).collect()
}

/// A deserializer that records the fields a type asks for and gives nothing.
struct Probe<'a> {
    found: &'a mut &'static [&'static str],
}

#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("probed")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        *self.found = fields;
        Err(Stop)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        *self.found = variants;
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_gives_its_fields_and_an_enum_its_variants() {
        assert_eq!(fields::<crate::spec::fault::FaultRule>()[0], "kind");
        assert_eq!(fields::<crate::spec::model::Provider>(), ["openai", "anthropic"]);
        assert!(fields::<crate::spec::model::ModelSpec>().contains(&"max_concurrency"));
    }
}
