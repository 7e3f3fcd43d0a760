//! Arguments built from a tool's JSON Schema and what the adversary has
//! seen: for each required property, values of the same key from earlier
//! results first, then the ids and numbers the input quotes, then a
//! fallback of the property's type; each kept only when the property's
//! schema (type, pattern, bounds) admits it. `Aim::Wrong` swaps every id
//! and amount for one the input does not name.

use serde_json::{Map, Value as Json, json};

use super::sight::Sight;
use crate::executor::ToolDef;

/// Most candidates kept per property.
const MAX_CANDIDATES: usize = 8;

/// Which arguments to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aim {
    /// The `i`-th set: each property's `i`-th candidate (or its last).
    Right(usize),
    /// Valid values other than the ids and amounts the input names.
    Wrong,
}

/// The required properties of a tool's schema (all of them when it lists none), with their schemas.
fn properties(params: &Json) -> Vec<(String, Json)> {
    let Some(props) = params.get("properties").and_then(Json::as_object) else { return Vec::new() };
    let required: Vec<&str> = params
        .get("required")
        .and_then(Json::as_array)
        .map(|r| r.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .filter(|(k, _)| required.is_empty() || required.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The arguments of a call of `tool`, and whether its schema admits them.
pub fn args(tool: &ToolDef, sight: &Sight<'_, '_>, aim: Aim) -> (Json, bool) {
    let obj = object(&tool.spec.params, sight, aim, 0);
    let valid = tool.validator.is_valid(&obj);
    (obj, valid)
}

/// Most argument sets [`Aim::Right`] makes for a tool.
pub const MAX_SETS: usize = 24;

/// How many different argument sets [`Aim::Right`] makes for `tool`.
pub fn variety(tool: &ToolDef, sight: &Sight<'_, '_>) -> usize {
    let lens: Vec<usize> =
        properties(&tool.spec.params).iter().map(|(k, p)| candidates(k, p, sight, 0).len().max(1)).collect();
    combos(&lens, MAX_SETS).len().max(1)
}

/// Index vectors into candidate lists of these lengths, the best first:
/// by the sum of their indices, then in order; at most `cap`.
fn combos(lens: &[usize], cap: usize) -> Vec<Vec<usize>> {
    fn fill(lens: &[usize], left: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>, cap: usize) {
        if out.len() >= cap {
            return;
        }
        if cur.len() == lens.len() {
            if left == 0 {
                out.push(cur.clone());
            }
            return;
        }
        for i in 0..lens[cur.len()].min(left + 1) {
            cur.push(i);
            fill(lens, left - i, cur, out, cap);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    let top: usize = lens.iter().map(|l| l.saturating_sub(1)).sum();
    for layer in 0..=top {
        fill(lens, layer, &mut Vec::new(), &mut out, cap);
    }
    out
}

fn object(schema: &Json, sight: &Sight<'_, '_>, aim: Aim, depth: usize) -> Json {
    let props: Vec<(String, Json, Vec<Json>)> = properties(schema)
        .into_iter()
        .map(|(name, prop)| {
            let c = candidates(&name, &prop, sight, depth);
            (name, prop, c)
        })
        .filter(|(_, _, c)| !c.is_empty())
        .collect();
    let pick = match aim {
        Aim::Right(i) => {
            let lens: Vec<usize> = props.iter().map(|(_, _, c)| c.len()).collect();
            let all = combos(&lens, i + 1);
            all.get(i).or(all.last()).cloned().unwrap_or_default()
        }
        Aim::Wrong => Vec::new(),
    };
    let mut m = Map::new();
    for (k, (name, prop, cands)) in props.into_iter().enumerate() {
        let v = match aim {
            Aim::Right(_) => cands[pick.get(k).copied().unwrap_or(0)].clone(),
            Aim::Wrong => wrong(&prop, &cands[0], &cands, sight),
        };
        m.insert(name, v);
    }
    Json::Object(m)
}

/// The type a property's schema names (the first that is not null).
fn type_of(prop: &Json) -> Option<&str> {
    match prop.get("type") {
        Some(Json::String(s)) => Some(s),
        Some(Json::Array(a)) => a.iter().filter_map(Json::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

/// Whether result key `key` may hold a value of property `name`.
fn key_fits(name: &str, key: &str) -> bool {
    !key.is_empty() && (name == key || name.ends_with(&format!("_{key}")) || key.ends_with(&format!("_{name}")))
}

/// A property that holds an id or a code, not free text.
fn idish_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["id", "code", "number", "num", "ref", "key"].iter().any(|w| n == *w || n.ends_with(&format!("_{w}")))
}

/// Candidate values for property `name`, best first, each admitted by its schema.
fn candidates(name: &str, prop: &Json, sight: &Sight<'_, '_>, depth: usize) -> Vec<Json> {
    if let Some(e) = prop.get("enum").and_then(Json::as_array) {
        return e.iter().take(MAX_CANDIDATES).cloned().collect();
    }
    if let Some(c) = prop.get("const") {
        return vec![c.clone()];
    }
    let ty = type_of(prop);
    let mut raw: Vec<Json> = Vec::new();
    match ty {
        Some("array") => {
            let items = prop.get("items").cloned().unwrap_or(json!({}));
            raw.extend(candidates(name, &items, sight, depth + 1).into_iter().take(3).map(|v| json!([v])));
            raw.push(json!([]));
        }
        Some("object") if depth < 3 => raw.push(object(prop, sight, Aim::Right(0), depth + 1)),
        _ => {
            let text = ty == Some("string") && prop.get("pattern").is_none() && !idish_name(name);
            if text {
                raw.push(Json::String("Done.".into()));
            }
            raw.extend(sight.learned.iter().filter(|(k, _)| key_fits(name, k)).filter_map(|(_, v)| coerce(v, ty)));
            // An amount: a price or a total seen will do, before the input's numbers (often ids).
            let numbers = |pred: &dyn Fn(&str) -> bool| -> Vec<Json> {
                sight.learned.iter().filter(|(k, v)| v.is_number() && pred(k)).map(|(_, v)| v.clone()).collect()
            };
            if ty == Some("number") {
                raw.extend(numbers(&amount_key));
            }
            raw.extend(sight.quoted.iter().filter_map(|q| coerce(&Json::String(q.clone()), ty)));
            if ty == Some("number") {
                raw.extend(numbers(&|k| !amount_key(k)));
            }
            raw.extend(fallback(ty));
        }
    }
    let mut out: Vec<Json> = Vec::new();
    for v in raw {
        if admits(prop, &v) && !out.iter().any(|o| same(o, &v)) {
            out.push(v);
        }
        if out.len() >= MAX_CANDIDATES {
            break;
        }
    }
    out
}

/// A result key that holds an amount of money.
fn amount_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    ["price", "total", "amount", "cost", "balance", "fee"].iter().any(|w| k.contains(w))
}

/// The same value (numbers by value: 3 and 3.0 are one).
fn same(a: &Json, b: &Json) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// `v` as a value of type `ty`, when it can be one.
fn coerce(v: &Json, ty: Option<&str>) -> Option<Json> {
    match (ty, v) {
        (None, _) => Some(v.clone()),
        (Some("string"), Json::String(_)) => Some(v.clone()),
        (Some("string"), Json::Number(n)) => Some(Json::String(n.to_string())),
        (Some("integer"), Json::Number(n)) if n.is_i64() || n.is_u64() => Some(v.clone()),
        (Some("integer"), Json::String(s)) => s.parse::<i64>().ok().map(Json::from),
        (Some("number"), Json::Number(_)) => Some(v.clone()),
        (Some("number"), Json::String(s)) => s.parse::<f64>().ok().filter(|f| f.is_finite()).map(Json::from),
        (Some("boolean"), Json::Bool(_)) => Some(v.clone()),
        _ => None,
    }
}

fn fallback(ty: Option<&str>) -> Option<Json> {
    Some(match ty? {
        "string" => json!("x"),
        "integer" => json!(1),
        "number" => json!(1.0),
        "boolean" => json!(true),
        _ => return None,
    })
}

/// Whether a property's schema admits `v` (its pattern and numeric bounds;
/// the tool's validator has the last word on the whole).
fn admits(prop: &Json, v: &Json) -> bool {
    if let (Some(p), Json::String(s)) = (prop.get("pattern").and_then(Json::as_str), v)
        && !regex::Regex::new(p).is_ok_and(|re| re.is_match(s))
    {
        return false;
    }
    if let Some(x) = v.as_f64() {
        let bound = |k: &str| prop.get(k).and_then(Json::as_f64);
        if bound("minimum").is_some_and(|m| x < m)
            || bound("maximum").is_some_and(|m| x > m)
            || bound("exclusiveMinimum").is_some_and(|m| x <= m)
            || bound("exclusiveMaximum").is_some_and(|m| x >= m)
        {
            return false;
        }
    }
    true
}

/// Whether `v` is one of the ids or numbers the input quotes.
fn named(v: &Json, sight: &Sight<'_, '_>) -> bool {
    sight.quoted.iter().any(|q| match v {
        Json::String(s) => s == q,
        Json::Number(n) => q.parse::<f64>().ok().zip(n.as_f64()).is_some_and(|(a, b)| (a - b).abs() < 1e-9),
        _ => false,
    })
}

/// An id or an amount (a string holding a digit, a number), not free text.
fn idish(v: &Json) -> bool {
    match v {
        Json::String(s) => s.chars().any(|c| c.is_ascii_digit()),
        Json::Number(_) => true,
        _ => false,
    }
}

/// A valid value other than the ids and amounts the input names: another
/// candidate, else the right one with its last digit (or its amount) changed.
fn wrong(prop: &Json, right: &Json, cands: &[Json], sight: &Sight<'_, '_>) -> Json {
    if !idish(right) {
        return right.clone();
    }
    if let Some(c) = cands.iter().find(|c| *c != right && idish(c) && !named(c, sight)) {
        return c.clone();
    }
    mutate(right).filter(|m| admits(prop, m) && !named(m, sight)).unwrap_or_else(|| right.clone())
}

/// `v` changed a little: its last digit, or one more.
fn mutate(v: &Json) -> Option<Json> {
    match v {
        Json::String(s) => {
            let i = s.rfind(|c: char| c.is_ascii_digit())?;
            let d = s.as_bytes()[i] - b'0';
            let mut out = s.clone();
            out.replace_range(i..i + 1, &((d + 1) % 10).to_string());
            Some(Json::String(out))
        }
        Json::Number(n) if n.is_i64() => n.as_i64().map(|x| json!(x + 1)),
        Json::Number(n) => n.as_f64().map(|x| json!(x + 1.0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_mutated_id_keeps_its_shape() {
        assert_eq!(super::mutate(&json!("P-9930")), Some(json!("P-9931")));
        assert_eq!(super::mutate(&json!("mia_li_3669")), Some(json!("mia_li_3660")));
        assert_eq!(super::mutate(&json!(4821)), Some(json!(4822)));
        assert_eq!(super::mutate(&json!("none")), None);
    }

    #[test]
    fn combos_come_best_first() {
        let c = super::combos(&[2, 3], 10);
        assert_eq!(c, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![0, 2], vec![1, 1], vec![1, 2]]);
        assert_eq!(super::combos(&[8, 8, 8], 5).len(), 5);
    }

    #[test]
    fn a_pattern_and_bounds_are_respected() {
        let p = json!({ "type": "string", "pattern": "^P-[0-9]+$" });
        assert!(super::admits(&p, &json!("P-1")) && !super::admits(&p, &json!("4821")));
        let n = json!({ "type": "number", "exclusiveMinimum": 0 });
        assert!(!super::admits(&n, &json!(0)) && super::admits(&n, &json!(0.5)));
    }
}
