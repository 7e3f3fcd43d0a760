//! `db:digest()` of a SQLite database: sha256 over every table's name and
//! the digest of its rows as a multiset (each row hashed; the row hashes
//! sorted, then hashed).
//!
//! A trial's database starts as a copy of its fixture's image, and most
//! trials change few of its tables, or none. So the digest of a copy reuses
//! the digests of the fixture's tables (computed once per image) for every
//! table whose pages are all byte for byte the fixture's. Which pages differ
//! is a comparison of the two images; which table owns each differing page,
//! SQLite's own `dbstat` says (interior, leaf and overflow pages alike). A
//! table none of whose pages differ reads exactly as the fixture's did. When
//! that cannot be shown (the schema changed, a transaction is open, the
//! image is not in memory, an object named `dbstat` exists), every table is
//! read in full.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, ffi};
use sha2::{Digest, Sha256};

type Hash = [u8; 32];

/// A row of the schema table (`type, name, tbl_name, rootpage, sql`).
type SchemaRow = (String, String, String, i64, Option<String>);

/// What the digest of a copy of an image reuses: the image's schema and
/// each table's digest.
struct Known {
    schema: Vec<SchemaRow>,
    tables: HashMap<String, Hash>,
}

/// The digest of `conn`'s main database, which started as a copy of
/// `origin` when it is given.
pub fn digest(conn: &Connection, origin: Option<&Arc<Vec<u8>>>) -> rusqlite::Result<String> {
    let known = origin.and_then(|image| known(image).map(|k| (image, k)));
    let reuse = known.and_then(|(image, k)| changed_tables(conn, image, &k).map(|changed| (k, changed)));
    let mut h = Sha256::new();
    for (name, root) in tables(conn)? {
        let d = match &reuse {
            Some((k, changed)) if root > 0 && !changed.contains(&name.to_ascii_lowercase()) => {
                match k.tables.get(&name) {
                    Some(d) => *d,
                    None => table_digest(conn, &name)?,
                }
            }
            _ => table_digest(conn, &name)?,
        };
        h.update(name.as_bytes());
        h.update([0]);
        h.update(d);
    }
    Ok(crate::util::digest::hex(&h.finalize()))
}

/// Every table of the main database (its name and root page, 0 for a
/// virtual table), by name.
fn tables(conn: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    let mut s = conn.prepare_cached(
        "SELECT name, rootpage FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    )?;
    let mut tables: Vec<(String, i64)> = s
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, Option<i64>>(1)?.unwrap_or(0))))?
        .collect::<rusqlite::Result<_>>()?;
    tables.sort();
    Ok(tables)
}

/// One table's rows as a multiset: each row's values (typed, separated)
/// hashed, the hashes sorted and hashed.
fn table_digest(conn: &Connection, name: &str) -> rusqlite::Result<Hash> {
    let mut s = conn.prepare(&format!("SELECT * FROM main.\"{}\"", name.replace('"', "\"\"")))?;
    let n = s.column_count();
    let mut rows = s.query([])?;
    let mut line = Vec::new();
    let mut hashes: Vec<Hash> = Vec::new();
    while let Some(r) = rows.next()? {
        line.clear();
        for i in 0..n {
            // Writing into a Vec cannot fail.
            let _ = match r.get_ref(i)? {
                ValueRef::Null => line.write_all(b"N"),
                ValueRef::Integer(v) => write!(line, "I{v}"),
                ValueRef::Real(v) => write!(line, "R{v:?}"),
                ValueRef::Text(v) => line.write_all(b"T").and_then(|_| line.write_all(v)),
                ValueRef::Blob(v) => line.write_all(b"B").and_then(|_| line.write_all(v)),
            };
            line.push(0x1f);
        }
        hashes.push(Sha256::digest(&line).into());
    }
    hashes.sort_unstable();
    let mut h = Sha256::new();
    for r in &hashes {
        h.update(r);
    }
    Ok(h.finalize().into())
}

fn schema(conn: &Connection) -> rusqlite::Result<Vec<SchemaRow>> {
    let mut s =
        conn.prepare_cached("SELECT type, name, tbl_name, rootpage, sql FROM main.sqlite_master ORDER BY rowid")?;
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, Option<i64>>(3)?.unwrap_or(0), r.get(4)?)))?
        .collect()
}

/// Images whose digests are known, by address. The weak handle keeps the
/// address from naming another image while the entry lives, and keeps
/// nothing of the image's bytes alive.
type KnownCache = HashMap<usize, (Weak<Vec<u8>>, Option<Arc<Known>>)>;

/// Images kept in the cache at most (entries of dropped images go first).
const KNOWN_IMAGES: usize = 4096;

fn known_cache() -> &'static Mutex<KnownCache> {
    static CACHE: OnceLock<Mutex<KnownCache>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The schema and table digests of `image`, computed once (None when the
/// image cannot serve: unreadable, or it names an object `dbstat`).
fn known(image: &Arc<Vec<u8>>) -> Option<Arc<Known>> {
    let key = Arc::as_ptr(image) as usize;
    if let Some((w, k)) = known_cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key)
        && w.upgrade().is_some_and(|i| Arc::ptr_eq(&i, image))
    {
        return k.clone();
    }
    let computed = compute_known(image).map(Arc::new);
    let mut cache = known_cache().lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= KNOWN_IMAGES {
        cache.retain(|_, (w, _)| w.strong_count() > 0);
        if cache.len() >= KNOWN_IMAGES {
            cache.clear();
        }
    }
    cache.insert(key, (Arc::downgrade(image), computed.clone()));
    computed
}

fn compute_known(image: &[u8]) -> Option<Known> {
    let conn = open(image).ok()?;
    let schema = schema(&conn).ok()?;
    // A table or view named dbstat would stand for SQLite's own.
    if schema.iter().any(|(_, name, ..)| name.eq_ignore_ascii_case("dbstat")) {
        return None;
    }
    let mut tables = HashMap::new();
    for (name, _) in self::tables(&conn).ok()? {
        let d = table_digest(&conn, &name).ok()?;
        tables.insert(name, d);
    }
    Some(Known { schema, tables })
}

/// A read-only copy of an image (a fixture's: the suite's own).
fn open(image: &[u8]) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_in_memory()?;
    conn.deserialize_read_exact(rusqlite::MAIN_DB, image, image.len(), true)?;
    Ok(conn)
}

/// The tables of `conn` (lower-cased names) that own a page differing from
/// `image`'s, the image it started from; None when that cannot be shown.
fn changed_tables(conn: &Connection, image: &[u8], known: &Known) -> Option<HashSet<String>> {
    // In an open transaction, the image lags behind what a query reads.
    if !conn.is_autocommit() {
        return None;
    }
    // The same schema: the same tables, at the same root pages, and no
    // object of the main database named dbstat.
    if schema(conn).ok()? != known.schema {
        return None;
    }
    let differing = {
        let mut size: ffi::sqlite3_int64 = 0;
        // SAFETY: `conn` is a live connection; with NOCOPY, SQLite returns
        // its in-memory database's own buffer (or NULL when it has none),
        // valid until the next write through `conn`, which cannot happen
        // before this block ends: `conn` is only read here.
        let now = unsafe {
            let p = ffi::sqlite3_serialize(conn.handle(), c"main".as_ptr(), &mut size, ffi::SQLITE_SERIALIZE_NOCOPY);
            if p.is_null() || size < 0 {
                return None;
            }
            std::slice::from_raw_parts(p, size as usize)
        };
        differing_pages(now, image)?
    };
    let mut changed = HashSet::new();
    if differing.is_empty() {
        return Some(changed);
    }
    let differing: HashSet<i64> = differing.into_iter().collect();
    // `main.dbstat`: SQLite's table of pages (a temporary object of that name
    // cannot stand for it; a main one was ruled out with the schema).
    let mut s = conn.prepare_cached("SELECT name, pageno FROM main.dbstat").ok()?;
    let mut rows = s.query([]).ok()?;
    while let Some(r) = rows.next().ok()? {
        let page: i64 = r.get(1).ok()?;
        if differing.contains(&page) {
            let name: String = r.get(0).ok()?;
            changed.insert(name.to_ascii_lowercase());
        }
    }
    if changed.contains("sqlite_schema") || changed.contains("sqlite_master") {
        return None;
    }
    Some(changed)
}

/// The numbers of the pages of `now` that differ from `was`'s (a page only
/// one has differs), or None when the two are not laid out alike.
fn differing_pages(now: &[u8], was: &[u8]) -> Option<Vec<i64>> {
    let size = page_size(was)?;
    if page_size(now)? != size || now.len() % size != 0 || was.len() % size != 0 {
        return None;
    }
    // The header's fields that say how pages read: page size, file format
    // versions, reserved bytes, payload fractions; schema format; text encoding.
    for r in [16..24, 44..48, 56..60] {
        if now[r.clone()] != was[r] {
            return None;
        }
    }
    let pages = now.len().max(was.len()) / size;
    let mut out = Vec::new();
    for i in 0..pages {
        // Page 1's first 100 bytes are the file header (its change counter moves with every write).
        let from = if i == 0 { 100 } else { 0 };
        let a = now.get(i * size + from..(i + 1) * size);
        let b = was.get(i * size + from..(i + 1) * size);
        if a != b {
            out.push(i as i64 + 1);
        }
    }
    Some(out)
}

fn page_size(image: &[u8]) -> Option<usize> {
    if image.len() < 100 {
        return None;
    }
    match u16::from_be_bytes([image[16], image[17]]) {
        1 => Some(65536),
        n if n >= 512 && n.is_power_of_two() => Some(n as usize),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_copy(image: &[u8], read_only: bool) -> rusqlite::Result<Connection> {
        let mut conn = Connection::open_in_memory()?;
        conn.deserialize_read_exact(rusqlite::MAIN_DB, image, image.len(), read_only)?;
        Ok(conn)
    }

    fn image(sql: &str) -> Arc<Vec<u8>> {
        let mut c = Connection::open_in_memory().unwrap();
        c.execute_batch(sql).unwrap();
        Arc::new(c.serialize(rusqlite::MAIN_DB).unwrap().to_vec())
    }

    const FIXTURE: &str = "
        CREATE TABLE small (id INTEGER PRIMARY KEY, v TEXT);
        CREATE TABLE big (id TEXT PRIMARY KEY, body TEXT);
        CREATE TABLE other (k TEXT, n REAL);
        WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
          INSERT INTO small SELECT x, 'v' || x FROM i;
        WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40)
          INSERT INTO big SELECT 'b' || x, printf('%.*c', 9000, 'x') FROM i;
        INSERT INTO other VALUES ('a', 1.5), ('b', 2);
    ";

    /// The digest of a copy, with and without reusing the fixture's tables.
    fn both(conn: &Connection, img: &Arc<Vec<u8>>) -> (String, String) {
        (digest(conn, Some(img)).unwrap(), digest(conn, None).unwrap())
    }

    #[test]
    fn a_copy_reuses_the_fixture_tables_only_where_no_page_differs() {
        let img = image(FIXTURE);
        let fixture = digest(&open_copy(&img, true).unwrap(), None).unwrap();
        let c = open_copy(&img, false).unwrap();
        let (fast, full) = both(&c, &img);
        assert_eq!(fast, full);
        assert_eq!(fast, fixture, "an unchanged copy is the fixture");

        // One small row: its table changes, the others are reused.
        c.execute("UPDATE small SET v = 'w' WHERE id = 7", []).unwrap();
        let (fast, full) = both(&c, &img);
        assert_eq!(fast, full);
        assert_ne!(fast, fixture);
        assert_eq!(changed_tables(&c, &img, &known(&img).unwrap()).unwrap(), HashSet::from(["small".to_string()]));

        // Put back: the same rows again, whatever the pages hold.
        c.execute("UPDATE small SET v = 'v7' WHERE id = 7", []).unwrap();
        assert_eq!(both(&c, &img).0, fixture);
    }

    #[test]
    fn a_change_only_an_overflow_page_holds_is_seen() {
        let img = image(FIXTURE);
        let mut c = open_copy(&img, false).unwrap();
        // Same length, last character changed: SQLite overwrites the cell in
        // place, and only the row's last overflow page differs.
        c.execute("UPDATE big SET body = printf('%.*c', 8999, 'x') || 'y' WHERE id = 'b3'", []).unwrap();
        let k = known(&img).unwrap();
        let now = c.serialize(rusqlite::MAIN_DB).unwrap().to_vec();
        let differing = differing_pages(&now, &img).unwrap();
        assert!(!differing.is_empty());
        for p in &differing {
            let kind: String = c.query_row("SELECT pagetype FROM dbstat WHERE pageno = ?", [p], |r| r.get(0)).unwrap();
            assert_eq!(kind, "overflow", "page {p} differs: the test means to change an overflow page alone");
        }
        assert_eq!(changed_tables(&c, &img, &k).unwrap(), HashSet::from(["big".to_string()]));
        let (fast, full) = both(&c, &img);
        assert_eq!(fast, full);
        assert_ne!(fast, digest(&open_copy(&img, true).unwrap(), None).unwrap());
    }

    #[test]
    fn what_could_mislead_the_page_comparison_reads_every_table() {
        let img = image(FIXTURE);
        let fixture = digest(&open_copy(&img, true).unwrap(), None).unwrap();
        let k = known(&img).unwrap();

        // A temporary dbstat claiming no page: not the one asked.
        let c = open_copy(&img, false).unwrap();
        c.execute_batch("CREATE TEMP TABLE dbstat (name TEXT, pageno INTEGER); UPDATE other SET n = 3 WHERE k = 'a'")
            .unwrap();
        assert_eq!(changed_tables(&c, &img, &k).unwrap(), HashSet::from(["other".to_string()]));
        let (fast, full) = both(&c, &img);
        assert_eq!(fast, full);
        assert_ne!(fast, fixture);

        // A temporary table in a main table's name: the digest is the main table's.
        let c = open_copy(&img, false).unwrap();
        c.execute_batch("CREATE TEMP TABLE small (id INTEGER PRIMARY KEY, v TEXT)").unwrap();
        assert_eq!(both(&c, &img), (fixture.clone(), fixture.clone()));

        // A main object named dbstat changes the schema: every table read.
        let c = open_copy(&img, false).unwrap();
        c.execute_batch("CREATE VIEW dbstat AS SELECT 'x' AS name, 0 AS pageno; UPDATE small SET v = 'z'").unwrap();
        assert!(changed_tables(&c, &img, &k).is_none());
        let (fast, full) = both(&c, &img);
        assert_eq!(fast, full);
        assert_ne!(fast, fixture);

        // An open transaction: the image lags behind; the digest sees the change.
        let c = open_copy(&img, false).unwrap();
        c.execute_batch("BEGIN; UPDATE other SET k = 'c' WHERE k = 'a'").unwrap();
        assert!(changed_tables(&c, &img, &k).is_none());
        let (fast, full) = both(&c, &img);
        assert_eq!(fast, full);
        assert_ne!(fast, fixture);
        c.execute_batch("ROLLBACK").unwrap();
        assert_eq!(both(&c, &img).0, fixture);

        // A new table.
        let c = open_copy(&img, false).unwrap();
        c.execute_batch("CREATE TABLE more (x); INSERT INTO more VALUES (1)").unwrap();
        let (fast, full) = both(&c, &img);
        assert_eq!(fast, full);
        assert_ne!(fast, fixture);
    }

    #[test]
    fn rows_are_a_multiset() {
        let a = open_copy(&image("CREATE TABLE t (x, y); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (2, 'b');"), true)
            .unwrap();
        let b = open_copy(&image("CREATE TABLE t (x, y); INSERT INTO t VALUES (2, 'b'), (1, 'a'), (2, 'b');"), true)
            .unwrap();
        let c = open_copy(&image("CREATE TABLE t (x, y); INSERT INTO t VALUES (2, 'b'), (1, 'a');"), true).unwrap();
        let d = open_copy(&image("CREATE TABLE t (x, y); INSERT INTO t VALUES (1.0, 'a'), (2, 'b'), (2, 'b');"), true)
            .unwrap();
        let g = |c: &Connection| digest(c, None).unwrap();
        assert_eq!(g(&a), g(&b));
        assert_ne!(g(&a), g(&c), "a row twice is not a row once");
        assert_ne!(g(&a), g(&d), "1 is not 1.0");
    }
}
