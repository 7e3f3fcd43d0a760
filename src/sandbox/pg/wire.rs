//! The wire: parameters sent as text (typed by the server), and result
//! values decoded from PostgreSQL's binary format by type.

use bytes::BytesMut;
use postgres::types::{FromSql, IsNull, Kind, ToSql, Type, to_sql_checked};

use crate::sandbox::sql::SqlValue;

type BoxError = Box<dyn std::error::Error + Sync + Send>;

/// A parameter, sent as text and typed by the server (a blob to a bytea
/// column goes as raw bytes).
#[derive(Debug)]
pub(super) struct Param<'a>(pub(super) &'a SqlValue);

fn is_int(ty: &Type) -> bool {
    [Type::INT2, Type::INT4, Type::INT8, Type::OID].contains(ty)
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, BoxError> {
        let text = match self.0 {
            SqlValue::Null => return Ok(IsNull::Yes),
            SqlValue::Blob(b) if *ty == Type::BYTEA => {
                out.extend_from_slice(b);
                return Ok(IsNull::No);
            }
            SqlValue::Integer(i) if *ty == Type::BOOL => (if *i != 0 { "true" } else { "false" }).to_string(),
            SqlValue::Integer(i) => i.to_string(),
            SqlValue::Real(f) if *ty == Type::BOOL => (if *f != 0.0 { "true" } else { "false" }).to_string(),
            SqlValue::Real(f) if f.is_nan() => "NaN".into(),
            SqlValue::Real(f) if f.is_infinite() => (if *f > 0.0 { "Infinity" } else { "-Infinity" }).into(),
            SqlValue::Real(f) if is_int(ty) && f.fract() == 0.0 => format!("{}", *f as i64),
            SqlValue::Real(f) => format!("{f}"),
            SqlValue::Bool(b) if is_int(ty) => (if *b { "1" } else { "0" }).to_string(),
            SqlValue::Bool(b) => (if *b { "true" } else { "false" }).to_string(),
            SqlValue::Text(s) => s.clone(),
            SqlValue::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        };
        out.extend_from_slice(text.as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, ty: &Type) -> postgres::types::Format {
        match self.0 {
            SqlValue::Blob(_) if *ty == Type::BYTEA => postgres::types::Format::Binary,
            _ => postgres::types::Format::Text,
        }
    }

    to_sql_checked!();
}

/// A column's value, read by its type (binary format).
pub(super) struct Out(pub(super) SqlValue);

impl<'a> FromSql<'a> for Out {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Self, BoxError> {
        decode(ty, raw).map(Out)
    }
    fn from_sql_null(_: &Type) -> std::result::Result<Self, BoxError> {
        Ok(Out(SqlValue::Null))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

fn be<const N: usize>(raw: &[u8]) -> std::result::Result<[u8; N], BoxError> {
    raw.get(..N).and_then(|s| s.try_into().ok()).ok_or_else(|| "a value shorter than its type".into())
}

/// Microseconds since 2000-01-01 (PostgreSQL's epoch) as a timestamp's text.
fn timestamp_text(us: i64, zone: &str) -> std::result::Result<String, BoxError> {
    match us {
        i64::MAX => return Ok("infinity".into()),
        i64::MIN => return Ok("-infinity".into()),
        _ => {}
    }
    let ts = jiff::Timestamp::from_microsecond(us + 946_684_800_000_000)?;
    let dt = ts.to_zoned_datetime(jiff::tz::TimeZone::UTC).datetime();
    Ok(format!("{} {}{zone}", dt.date(), time_text(dt.time())))
}

fn time_text(t: jiff::civil::Time) -> String {
    let mut s = format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second());
    let micro = t.subsec_nanosecond() / 1000;
    if micro != 0 {
        let frac = format!("{micro:06}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s
}

fn decode(ty: &Type, raw: &[u8]) -> std::result::Result<SqlValue, BoxError> {
    use SqlValue::*;
    Ok(match *ty {
        Type::BOOL => Bool(raw.first().is_some_and(|b| *b != 0)),
        Type::INT2 => Integer(i16::from_be_bytes(be(raw)?) as i64),
        Type::INT4 => Integer(i32::from_be_bytes(be(raw)?) as i64),
        Type::INT8 => Integer(i64::from_be_bytes(be(raw)?)),
        Type::OID => Integer(u32::from_be_bytes(be(raw)?) as i64),
        // A float4 reads as the decimal it shows (19.9, not 19.899999618530273).
        Type::FLOAT4 => Real(f32::from_be_bytes(be(raw)?).to_string().parse::<f64>()?),
        Type::FLOAT8 => Real(f64::from_be_bytes(be(raw)?)),
        Type::NUMERIC => Real(numeric(raw)?),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON | Type::XML => {
            Text(String::from_utf8_lossy(raw).into_owned())
        }
        Type::JSONB => Text(String::from_utf8_lossy(raw.get(1..).unwrap_or_default()).into_owned()),
        Type::BYTEA => Blob(raw.to_vec()),
        Type::UUID => {
            let h: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            if h.len() != 32 {
                return Err("a uuid that is not 16 bytes".into());
            }
            Text(format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]))
        }
        Type::DATE => {
            let days = i32::from_be_bytes(be(raw)?);
            Text(match days {
                i32::MAX => "infinity".into(),
                i32::MIN => "-infinity".into(),
                d => jiff::civil::date(2000, 1, 1).checked_add(jiff::Span::new().days(d as i64))?.to_string(),
            })
        }
        Type::TIMESTAMP => Text(timestamp_text(i64::from_be_bytes(be(raw)?), "")?),
        Type::TIMESTAMPTZ => Text(timestamp_text(i64::from_be_bytes(be(raw)?), "+00")?),
        Type::TIME => {
            let us = i64::from_be_bytes(be(raw)?);
            let t = jiff::civil::Time::midnight().checked_add(jiff::Span::new().microseconds(us))?;
            Text(time_text(t))
        }
        _ => match ty.kind() {
            Kind::Enum(_) => Text(String::from_utf8_lossy(raw).into_owned()),
            Kind::Domain(base) => decode(base, raw)?,
            _ if ty.name() == "citext" => Text(String::from_utf8_lossy(raw).into_owned()),
            _ => {
                return Err(format!(
                    "evalua does not read PostgreSQL's type {}: cast it in the query (e.g. col::text)",
                    ty.name()
                )
                .into());
            }
        },
    })
}

/// PostgreSQL's binary numeric: base-10000 digits with a weight, as an f64.
fn numeric(raw: &[u8]) -> std::result::Result<f64, BoxError> {
    let word = |i: usize| -> std::result::Result<u16, BoxError> {
        Ok(u16::from_be_bytes(be(&raw[(2 * i).min(raw.len())..])?))
    };
    let (ndigits, weight, sign) = (word(0)? as usize, word(1)? as i16 as i32, word(2)?);
    match sign {
        0xC000 => return Ok(f64::NAN),
        0xD000 => return Ok(f64::INFINITY),
        0xF000 => return Ok(f64::NEG_INFINITY),
        _ => {}
    }
    let mut digits = String::with_capacity(ndigits * 4);
    for i in 0..ndigits {
        digits.push_str(&format!("{:04}", word(4 + i)?));
    }
    if digits.is_empty() {
        return Ok(0.0);
    }
    let point = (weight + 1) * 4;
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
    };
    let v: f64 = text.parse()?;
    Ok(if sign == 0x4000 { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_and_times_decode() {
        // 12345.678: ndigits 3, weight 1, sign 0, dscale 3; digits 1, 2345, 6780.
        let raw = [0u16, 3, 1, 0, 3, 1, 2345, 6780];
        let mut b = Vec::new();
        for w in &raw[1..] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(numeric(&b).unwrap(), 12345.678);
        // -0.0005: ndigits 1, weight -1, sign negative, dscale 4; digit 5.
        let mut b = Vec::new();
        for w in [1u16, (-1i16) as u16, 0x4000, 4, 5] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(numeric(&b).unwrap(), -0.0005);
        assert_eq!(timestamp_text(0, "").unwrap(), "2000-01-01 00:00:00");
        assert_eq!(timestamp_text(86_400_000_000 + 1_500_000, "+00").unwrap(), "2000-01-02 00:00:01.5+00");
    }
}
