//! `suite:dataset` (SPEC §3): one case per row of a JSON Lines file, a JSON
//! array or a CSV file, each row through `map`; bad rows stop the load with
//! `file:line` and the column, or are skipped and counted.

use crate::common::*;

/// A suite declaring its cases from `data` (relative to the suite, in data/).
fn suite(data: &str, opts: &str) -> String {
    format!(
        r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "ds", trials = 2,
  agent = evalua.agent.scripted(function(task, env) return "echo: " .. task.input end) }}
suite:dataset("{data}", {opts})
return suite
"#
    )
}

const MAP: &str = r#"{ map = function(row, i)
    return { id = "q" .. row.n, input = row.q .. " #" .. i, tags = { row.kind },
             expect = { check.answer { contains = row.want } } }
  end }"#;

const JSONL: &str = "{\"n\": 1, \"q\": \"one\", \"want\": \"one\", \"kind\": \"a\"}\n\n\
{\"n\": 2, \"q\": \"two\", \"want\": \"zwei\", \"kind\": \"b\"}\n\
{\"n\": 3, \"q\": \"three\", \"want\": \"three\", \"kind\": \"a\"}\n";

#[test]
fn jsonl_json_and_csv_rows_become_the_same_cases() {
    let json_array = "[\n {\"n\": 1, \"q\": \"one\", \"want\": \"one\", \"kind\": \"a\"},\n \
                      {\"n\": 2, \"q\": \"two\", \"want\": \"zwei\", \"kind\": \"b\"},\n \
                      {\"n\": 3, \"q\": \"three\", \"want\": \"three\", \"kind\": \"a\"}\n]\n";
    let csv = "n,q,want,kind\n1,one,one,a\n2,two,zwei,b\n3,three,three,a\n";
    let mut answers = Vec::new();
    for (file, text) in [("rows.jsonl", JSONL), ("rows.json", json_array), ("rows.csv", csv)] {
        let s = suite(&format!("data/{file}"), MAP);
        let dir = project(&[("s.lua", s.as_str()), (&format!("data/{file}"), text)]);
        let o = run_suite(dir.path(), "s.lua", &["--jobs", "2"]);
        assert_eq!(o.status.code(), Some(0), "{file}: {}", stderr(&o));
        let recs = trials(&dir.path().join("out"));
        assert_eq!(recs.len(), 6, "{file}");
        let got: Vec<(String, String, String)> = recs
            .iter()
            .map(|r| {
                (
                    r["case"].as_str().unwrap().into(),
                    r["answer"].as_str().unwrap().into(),
                    r["outcome"].as_str().unwrap().into(),
                )
            })
            .collect();
        // map got (row, i): i counts rows (the blank JSONL line is not a row).
        assert_eq!(got[0], ("q1".into(), "echo: one #1".into(), "accepted".into()), "{file}");
        assert_eq!(got[2].2, "failed", "{file}: q2 wants 'zwei'");
        answers.push(got);

        // The manifest records the file's sha256 and its rows; the summary counts them.
        let m = json(&dir.path().join("out/manifest.json"));
        let d = &m["datasets"][0];
        assert_eq!(d["path"], format!("data/{file}").as_str(), "{m}");
        let bytes = std::fs::read(dir.path().join("data").join(file)).unwrap();
        use sha2::Digest;
        let sha: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(d["sha256"], sha.as_str());
        assert_eq!((d["rows"].as_u64(), d["cases"].as_u64(), d["skipped"].as_u64()), (Some(3), Some(3), Some(0)));
        let summary = json(&dir.path().join("out/summary.json"));
        assert_eq!(summary["datasets"][0]["rows"], 3);
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], answers[2]);
}

#[test]
fn csv_values_are_strings_and_rows_without_map_are_cases() {
    let s = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "ds", trials = 1,
  agent = evalua.agent.scripted(function(task, env) return task.input end) }
suite:dataset("cases.jsonl")
suite:dataset("nums.csv", { map = function(row, i)
  return { id = "csv" .. i, input = math.type(row.n) or type(row.n), expect = { check.answer { equals = "string" } } }
end })
return suite
"#;
    let dir = project(&[
        ("s.lua", s),
        ("cases.jsonl", "{\"id\": \"plain\", \"input\": \"hi\", \"tags\": [\"raw\"]}\n"),
        ("nums.csv", "n\n42\n"),
    ]);
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    assert_eq!(record(&recs, "plain", 1)["answer"], "hi");
    assert_eq!(record(&recs, "csv1", 1)["outcome"], "accepted", "{:?}", recs);
}

#[test]
fn a_bad_row_names_the_data_file_line_and_column() {
    let bad = "{\"n\": 1, \"q\": \"one\", \"want\": \"one\", \"kind\": \"a\"}\n{\"n\": 2, \"q\": }\n";
    let s = suite("data/rows.jsonl", MAP);
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.jsonl", bad)]);
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert_user_error(&o, "data/rows.jsonl:2: column 15: expected value");
    assert!(!dir.path().join("out").exists(), "no run dir for a suite that does not load");

    // A CSV row with a field too few: its line and the missing column.
    let s = suite("data/rows.csv", MAP);
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.csv", "n,q,want,kind\n1,one,one,a\n2,two,zwei\n")]);
    assert_user_error(
        &run_suite(dir.path(), "s.lua", &[]),
        "data/rows.csv:3: column 4: 3 fields, but the header row names 4",
    );

    // A JSON array with a syntax error inside the second element.
    let s = suite("data/rows.json", MAP);
    let dir = project(&[
        ("s.lua", s.as_str()),
        (
            "data/rows.json",
            "[\n {\"n\": 1, \"q\": \"one\", \"want\": \"one\", \"kind\": \"a\"},\n {\"n\": 2,, \"q\": 1}\n]",
        ),
    ]);
    assert_user_error(&run_suite(dir.path(), "s.lua", &[]), "data/rows.json:3: column 10:");

    // map raising, and a case that is not valid, name the row.
    let s = suite("data/rows.jsonl", "{ map = function(row) return { id = 'x' .. row.n, input = row.missing.q } end }");
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.jsonl", JSONL)]);
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert_user_error(&o, "data/rows.jsonl:1: row 1: s.lua:6:");
    let s = suite("data/rows.jsonl", "{ map = function(row) return { id = 'same', input = row.q } end }");
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.jsonl", JSONL)]);
    assert_user_error(
        &run_suite(dir.path(), "s.lua", &[]),
        "data/rows.jsonl:3: duplicate case id 'same' (first declared at data/rows.jsonl:1)",
    );
    let s =
        suite("data/rows.jsonl", "{ map = function(row) return { id = 'x' .. row.n, input = row.q, colour = 1 } end }");
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.jsonl", JSONL)]);
    assert_user_error(
        &run_suite(dir.path(), "s.lua", &[]),
        "data/rows.jsonl:1: row 1: suite:case: unknown key 'colour'",
    );
    let s = suite(
        "data/rows.jsonl",
        "{ map = function(row) if row.n == 2 then return nil end return { id = 'x' .. row.n, input = row.q } end }",
    );
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.jsonl", JSONL)]);
    assert_user_error(
        &run_suite(dir.path(), "s.lua", &[]),
        "data/rows.jsonl:3: row 2: map returned nil, not a case table",
    );
}

#[test]
fn skipped_rows_are_left_out_and_counted() {
    let bad = "{\"n\": 1, \"q\": \"one\", \"want\": \"one\", \"kind\": \"a\"}\nnot json\n\
               {\"n\": 3, \"q\": \"three\", \"want\": \"three\", \"kind\": \"a\"}\n{\"n\": 4}\n";
    let opts = MAP.replacen("{ map", "{ on_error = \"skip\", map", 1);
    let s = suite("data/rows.jsonl", &opts);
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.jsonl", bad)]);
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("warning: data/rows.jsonl: 2 of 4 rows skipped as bad"), "{err}");
    assert!(err.contains("data/rows.jsonl:2: column 2:"), "{err}");
    assert!(err.contains("data/rows.jsonl:4: row 4:"), "{err}");
    assert!(stdout(&o).contains("dataset data/rows.jsonl: 2 of 4 rows skipped"), "{}", stdout(&o));
    let cases: std::collections::BTreeSet<String> =
        trials(&dir.path().join("out")).iter().map(|r| r["case"].as_str().unwrap().to_string()).collect();
    assert_eq!(cases.into_iter().collect::<Vec<_>>(), vec!["q1", "q3"]);
    let d = &json(&dir.path().join("out/manifest.json"))["datasets"][0];
    assert_eq!((d["rows"].as_u64(), d["cases"].as_u64(), d["skipped"].as_u64()), (Some(4), Some(2), Some(2)));
    assert_eq!(d["skipped_rows"].as_array().unwrap().len(), 2);
    let s = &json(&dir.path().join("out/summary.json"))["datasets"][0];
    assert_eq!((s["rows"].as_u64(), s["cases"].as_u64(), s["skipped"].as_u64()), (Some(4), Some(2), Some(2)));
}

#[test]
fn list_and_case_filters_see_dataset_cases() {
    let s = suite("data/rows.jsonl", MAP);
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.jsonl", JSONL)]);
    let o = evalua(dir.path(), &["list", "s.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for (id, line) in [("q1", 1), ("q2", 3), ("q3", 4)] {
        assert!(out.contains(id) && out.contains(&format!("data/rows.jsonl:{line}")), "{out}");
    }
    let out = stdout(&evalua(dir.path(), &["list", "s.lua", "--tag", "b"]));
    assert!(out.contains("q2") && !out.contains("q1"), "{out}");
    let o = run_suite(dir.path(), "s.lua", &["--case", "q3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    assert_eq!(recs.len(), 2);
    assert!(recs.iter().all(|r| r["case"] == "q3" && r["answer"] == "echo: three #3"), "{recs:?}");
    let o = evalua(dir.path(), &["check", "s.lua"]);
    assert!(stdout(&o).contains("3 cases"), "{}", stdout(&o));
}

#[test]
fn dataset_paths_are_relative_to_the_suite_and_formats_are_checked() {
    let s = suite("data/rows.jsonl", MAP);
    let dir = project(&[("suites/s.lua", s.as_str()), ("suites/data/rows.jsonl", JSONL)]);
    let o = evalua(dir.path(), &["run", "suites/s.lua", "--out", "out", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(trials(&dir.path().join("out")).len(), 6);

    let s = suite("data/rows.txt", MAP);
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.txt", JSONL)]);
    assert_user_error(&run_suite(dir.path(), "s.lua", &[]), "cannot tell the format from the file's extension");
    let s = suite("data/rows.txt", &MAP.replacen("{ map", "{ format = \"jsonl\", map", 1));
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.txt", JSONL)]);
    assert_eq!(run_suite(dir.path(), "s.lua", &[]).status.code(), Some(0));
    let s = suite("data/none.jsonl", MAP);
    let dir = project(&[("s.lua", s.as_str())]);
    assert_user_error(&run_suite(dir.path(), "s.lua", &[]), "s.lua:6: suite:dataset: data/none.jsonl:");
    let s = suite("data/rows.jsonl", "{ format = \"xml\" }");
    let dir = project(&[("s.lua", s.as_str()), ("data/rows.jsonl", JSONL)]);
    assert_user_error(&run_suite(dir.path(), "s.lua", &[]), "s.lua:6: suite:dataset: 'format' must be");
}

#[test]
fn the_example_dataset_suite_runs_its_thousand_cases() {
    let dir = project(&[]);
    let out = dir.path().join("run");
    let o = evalua(&repo(), &["run", "suites/orders_dataset.lua", "--jobs", "2", "-q", "--out", out.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let recs = trials(&out);
    assert_eq!(recs.len(), 3000);
    let m = json(&out.join("manifest.json"));
    assert_eq!(m["datasets"][0]["rows"], 1000);
    assert_eq!(m["cases"].as_array().unwrap().len(), 1000);
    // The bot trips on the hard questions only.
    let failed: std::collections::BTreeSet<&str> =
        recs.iter().filter(|r| r["outcome"] != "accepted").map(|r| r["case"].as_str().unwrap()).collect();
    assert!(failed.len() > 50 && failed.len() < 400, "{} cases failed", failed.len());
}
