//! Two databases of one backend compared table by table, rows as multisets:
//! what `db:diff(other)` gives a check (`check.same_state`, SPEC §14). A
//! table's rows are compared whole (every column, types included: 3 and 3.0
//! differ, as they do in the fixture's own data); the rows that differ are
//! paired by their first column (a key, in most schemas) so the evidence
//! says which row changed how, not only which rows are new. A text cell
//! holding a JSON object or array is compared as a JSON value: two states
//! whose objects carry their keys in another order are the same state, as
//! τ-bench's own reward (a hash over sorted keys) has it; 3 and 3.0 still
//! differ, as they do there.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value as Json};

use super::sql::{Database, DbError, SqlValue};

/// What to leave out of the comparison.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    /// Whole tables.
    pub tables: Vec<String>,
    /// `(table, column)` pairs.
    pub columns: Vec<(String, String)>,
}

impl Ignore {
    /// From `"table"` / `"table.column"` entries.
    pub fn parse(list: &[String]) -> Ignore {
        let mut ig = Ignore::default();
        for s in list {
            match s.split_once('.') {
                Some((t, c)) => ig.columns.push((t.to_string(), c.to_string())),
                None => ig.tables.push(s.clone()),
            }
        }
        ig
    }
}

/// Rows shown per table and kind in a difference.
pub const SHOWN: usize = 5;

/// One row whose first column is in both databases with other values.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    /// The first column's value.
    pub key: Json,
    /// The columns that differ: `{ column: { here, there } }`.
    pub columns: Map<String, Json>,
}

/// How one table differs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TableDiff {
    pub table: String,
    /// The table is in only one of the two databases: "here" or "there".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only_in: Option<&'static str>,
    /// Rows (first [`SHOWN`]) only here / only there, with no counterpart by first column.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub only_here: Vec<Json>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub only_there: Vec<Json>,
    /// Rows present in both by first column, with other values (first [`SHOWN`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<Changed>,
    /// How many rows differ in all (here, there).
    pub rows_here: usize,
    pub rows_there: usize,
}

type Row = Vec<SqlValue>;

fn key_bytes(row: &[SqlValue], canonical: bool) -> Vec<u8> {
    let mut line = Vec::new();
    for v in row {
        match v {
            SqlValue::Null => line.push(b'N'),
            SqlValue::Integer(i) => line.extend_from_slice(format!("I{i}").as_bytes()),
            SqlValue::Real(f) => line.extend_from_slice(format!("R{f:?}").as_bytes()),
            SqlValue::Text(s) => match canonical.then(|| canonical_json(s)).flatten() {
                Some(j) => {
                    line.push(b'J');
                    line.extend_from_slice(j.as_bytes());
                }
                None => {
                    line.push(b'T');
                    line.extend_from_slice(s.as_bytes());
                }
            },
            SqlValue::Blob(b) => {
                line.push(b'B');
                line.extend_from_slice(b);
            }
            SqlValue::Bool(b) => line.extend_from_slice(if *b { b"b1" } else { b"b0" }),
        }
        line.push(0x1f);
    }
    line
}

/// A text that is a JSON object or array, written with its keys sorted and
/// no spaces (serde_json's map is ordered by key); None for any other text.
fn canonical_json(s: &str) -> Option<String> {
    let t = s.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Json>(s).ok().map(|v| v.to_string())
}

fn json_of(v: &SqlValue) -> Json {
    match v {
        SqlValue::Null => Json::Null,
        SqlValue::Integer(i) => Json::from(*i),
        SqlValue::Real(f) => serde_json::Number::from_f64(*f).map(Json::Number).unwrap_or(Json::Null),
        SqlValue::Text(s) => Json::String(s.clone()),
        SqlValue::Blob(b) => Json::String(format!("<{} bytes>", b.len())),
        SqlValue::Bool(b) => Json::Bool(*b),
    }
}

fn row_json(cols: &[String], row: &Row) -> Json {
    Json::Object(cols.iter().zip(row).map(|(c, v)| (c.clone(), json_of(v))).collect())
}

/// The rows of `a` and of `b` (indices, sorted by their keys) that the other
/// side does not match, walking both lists once (a multiset difference).
fn unmatched<'k>(
    a: &[usize],
    b: &[usize],
    key_a: &dyn Fn(usize) -> &'k Vec<u8>,
    key_b: &dyn Fn(usize) -> &'k Vec<u8>,
) -> (Vec<usize>, Vec<usize>) {
    let (mut extra_a, mut extra_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if key_a(x) == key_b(y) => {
                i += 1;
                j += 1;
            }
            (Some(&x), Some(&y)) if key_a(x) < key_b(y) => {
                extra_a.push(x);
                i += 1;
            }
            (Some(&x), None) => {
                extra_a.push(x);
                i += 1;
            }
            (_, Some(&y)) => {
                extra_b.push(y);
                j += 1;
            }
            (None, None) => break,
        }
    }
    (extra_a, extra_b)
}

/// A table's rows (columns not ignored), each with its comparison bytes.
fn rows_of(db: &dyn Database, sql_name: &str, drop: &[String]) -> Result<(Vec<String>, Vec<(Vec<u8>, Row)>), DbError> {
    let mut cols: Vec<String> = Vec::new();
    let mut keep: Vec<bool> = Vec::new();
    let mut rows = Vec::new();
    db.query(&format!("SELECT * FROM {sql_name}"), &[], true, &mut |names, row| {
        if keep.is_empty() && !names.is_empty() {
            keep = names.iter().map(|n| !drop.contains(n)).collect();
            cols = names.iter().zip(&keep).filter(|(_, k)| **k).map(|(n, _)| n.clone()).collect();
        }
        let row: Row = row.into_iter().zip(&keep).filter(|(_, k)| **k).map(|(v, _)| v).collect();
        // Raw bytes first: parsing every JSON cell is the slow part, and rows
        // equal as text are equal as values (see `unmatched`).
        rows.push((key_bytes(&row, false), row));
        true
    })?;
    Ok((cols, rows))
}

/// A database's tables: (name, the name quoted for SQL). SQLite's catalogue,
/// else PostgreSQL's (the trial database's `public` schema).
fn tables(db: &dyn Database) -> Result<BTreeMap<String, String>, DbError> {
    let mut out = BTreeMap::new();
    let mut each = |_: &[String], row: Vec<SqlValue>| {
        if let Some(SqlValue::Text(name)) = row.into_iter().next() {
            let quoted = format!("\"{}\"", name.replace('"', "\"\""));
            out.insert(name, quoted);
        }
        true
    };
    let sql = if db.sqlite().is_some() {
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    } else {
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
    };
    db.query(sql, &[], true, &mut each)?;
    Ok(out)
}

/// How `here` differs from `there`: one entry per table that differs
/// (tables in name order). Empty: the two hold the same rows.
pub fn diff(here: &dyn Database, there: &dyn Database, ignore: &Ignore) -> Result<Vec<TableDiff>, DbError> {
    let a = tables(here)?;
    let b = tables(there)?;
    let mut out = Vec::new();
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for name in names {
        if ignore.tables.contains(name) {
            continue;
        }
        let drop: Vec<String> = ignore.columns.iter().filter(|(t, _)| t == name).map(|(_, c)| c.clone()).collect();
        let (sql_a, sql_b) = (a.get(name), b.get(name));
        let (Some(sql_a), Some(sql_b)) = (sql_a, sql_b) else {
            out.push(TableDiff {
                table: name.clone(),
                only_in: Some(if sql_a.is_some() { "here" } else { "there" }),
                ..Default::default()
            });
            continue;
        };
        let (cols_a, mut rows_a) = rows_of(here, sql_a, &drop)?;
        let (cols_b, mut rows_b) = rows_of(there, sql_b, &drop)?;
        rows_a.sort_by(|x, y| x.0.cmp(&y.0));
        rows_b.sort_by(|x, y| x.0.cmp(&y.0));
        // The multisets' differences as text, then, among the rows left, as
        // values (JSON in a text cell compared with its keys sorted): the
        // same differences as comparing every row as values, parsing only
        // the rows whose text differs.
        let all = |n: usize| (0..n).collect::<Vec<usize>>();
        let (extra_a, extra_b) =
            unmatched(&all(rows_a.len()), &all(rows_b.len()), &|i| &rows_a[i].0, &|j| &rows_b[j].0);
        for i in &extra_a {
            rows_a[*i].0 = key_bytes(&rows_a[*i].1, true);
        }
        for j in &extra_b {
            rows_b[*j].0 = key_bytes(&rows_b[*j].1, true);
        }
        let (mut extra_a, mut extra_b) = (extra_a, extra_b);
        extra_a.sort_by(|x, y| rows_a[*x].0.cmp(&rows_a[*y].0));
        extra_b.sort_by(|x, y| rows_b[*x].0.cmp(&rows_b[*y].0));
        let (mut extra_a, mut extra_b) = unmatched(&extra_a, &extra_b, &|i| &rows_a[i].0, &|j| &rows_b[j].0);
        extra_a.sort_unstable();
        extra_b.sort_unstable();
        if extra_a.is_empty() && extra_b.is_empty() && cols_a == cols_b {
            continue;
        }
        let mut d = TableDiff {
            table: name.clone(),
            rows_here: extra_a.len(),
            rows_there: extra_b.len(),
            ..Default::default()
        };
        // Pair by first column when both sides have the same columns.
        let mut paired_b = vec![false; extra_b.len()];
        let same_cols = cols_a == cols_b && !cols_a.is_empty();
        let first_of = |r: &Row| r.first().map(|v| key_bytes(std::slice::from_ref(v), true));
        let mut by_first: BTreeMap<Vec<u8>, Vec<usize>> = BTreeMap::new();
        if same_cols {
            for (k, &jb) in extra_b.iter().enumerate() {
                if let Some(f) = first_of(&rows_b[jb].1) {
                    by_first.entry(f).or_default().push(k);
                }
            }
        }
        for &ia in &extra_a {
            let ra = &rows_a[ia].1;
            let partner =
                if same_cols { first_of(ra).and_then(|f| by_first.get_mut(&f)).and_then(|ks| ks.pop()) } else { None };
            match partner {
                Some(k) => {
                    paired_b[k] = true;
                    if d.changed.len() < SHOWN {
                        let rb = &rows_b[extra_b[k]].1;
                        let mut columns = Map::new();
                        for ((c, va), vb) in cols_a.iter().zip(ra).zip(rb) {
                            if key_bytes(std::slice::from_ref(va), true) != key_bytes(std::slice::from_ref(vb), true) {
                                columns.insert(
                                    c.clone(),
                                    serde_json::json!({ "here": json_of(va), "there": json_of(vb) }),
                                );
                            }
                        }
                        d.changed.push(Changed { key: ra.first().map(json_of).unwrap_or(Json::Null), columns });
                    }
                }
                None => {
                    if d.only_here.len() < SHOWN {
                        d.only_here.push(row_json(&cols_a, ra));
                    }
                }
            }
        }
        for (k, &jb) in extra_b.iter().enumerate() {
            if !paired_b[k] && d.only_there.len() < SHOWN {
                d.only_there.push(row_json(&cols_b, &rows_b[jb].1));
            }
        }
        out.push(d);
    }
    Ok(out)
}
