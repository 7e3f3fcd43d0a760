//! Instants from the dates and datetimes suites write (clocks, `check.answer { datetime }`).

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// Parse a date or datetime into Unix seconds. A value with an offset (`Z`,
/// `+02:00`) is that instant; one without is read in `zone` (`UTC`, `+02:00`
/// or an IANA name); a bare date is the start of that day in `zone`.
pub fn instant(text: &str, zone: &str) -> Result<f64, String> {
    let text = text.trim();
    let tz = parse_zone(zone)?;
    let ts: Timestamp = if let Ok(ts) = text.parse::<Timestamp>() {
        ts
    } else if let Ok(dt) = text.parse::<jiff::civil::DateTime>() {
        dt.to_zoned_datetime(tz).map_err(|e| e.to_string())?.timestamp()
    } else if let Ok(d) = text.parse::<jiff::civil::Date>() {
        d.to_zoned_datetime(tz).map_err(|e| e.to_string())?.timestamp()
    } else {
        return Err(format!("not a date or datetime: {text:?}"));
    };
    Ok(ts.as_second() as f64 + ts.subsec_nanosecond() as f64 / 1e9)
}

fn parse_zone(zone: &str) -> Result<TimeZone, String> {
    if zone.eq_ignore_ascii_case("UTC") || zone == "Z" {
        return Ok(TimeZone::UTC);
    }
    if let Some(rest) = zone.strip_prefix(['+', '-']) {
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let digits: String = rest.chars().filter(|c| c.is_ascii_digit()).collect();
        if digits.len() == 4 || digits.len() == 2 {
            let h: i32 = digits[..2].parse().unwrap_or(0);
            let m: i32 = if digits.len() == 4 { digits[2..].parse().unwrap_or(0) } else { 0 };
            let off = jiff::tz::Offset::from_seconds(sign * (h * 3600 + m * 60)).map_err(|e| e.to_string())?;
            return Ok(TimeZone::fixed(off));
        }
    }
    TimeZone::get(zone).map_err(|_| format!("unknown time zone {zone:?} (use UTC, +HH:MM or an IANA name)"))
}
