//! The viewer at 1280 × 900 in headless Chromium (issue 43 item 10): the
//! labelling keys sit right under the answer they judge, the labelling panel
//! and the trials table stay in their own halves, a criterion reads on a line
//! (not a word per line); an interleaved run's agents are told apart in the
//! runs list, each paired with its base, and the list fits 1280 px.

use serde_json::{Value, json};

use crate::annotate::{annotated_project, run_id};
use crate::browser::Driver;
use crate::common::*;
use crate::view::{Viewer, enc, wait_js};

/// An element's box in page coordinates.
fn rect(d: &Driver, js_element: &str) -> Value {
    d.js(&format!(
        "var e={js_element};if(!e)return null;var r=e.getBoundingClientRect();return {{top:r.top+window.scrollY,bottom:r.bottom+window.scrollY,left:r.left,right:r.right}}"
    ))
}

fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"))
}

fn at_1280(d: &Driver) {
    d.post("/window/rect", json!({ "width": 1280, "height": 900 }));
    assert_eq!(d.js("return window.outerWidth"), json!(1280));
}

#[test]
fn the_labelling_keys_sit_under_the_answer_and_nothing_overlaps_at_1280() {
    let Some(d) = Driver::start() else { return };
    let dir = annotated_project();
    let v = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana"]);
    let run = run_id(&v);
    at_1280(&d);
    d.goto(&format!("{}/run?r={}", v.base, enc(&run)));
    wait_js(&d, "return document.body.getAttribute('data-ready')", &json!("1"));
    // The first trial of the list: refund #1, failed.
    d.click("table.trials tr.t");
    wait_js(&d, "return !!document.getElementById('labtab')", &json!(true));
    d.screenshot("view-labels-1280.png");

    // The answer judged, then the keys: within a screen's reach, not 1,300 px apart.
    let answer =
        rect(&d, "[...document.querySelectorAll('#traj h4')].find(h=>h.innerText=='Answer').nextElementSibling");
    let keys = rect(&d, "document.querySelector('#labtab button.v-pass')");
    let gap = num(&keys, "top") - num(&answer, "bottom");
    assert!((0.0..300.0).contains(&gap), "the pass key is {gap} px below the answer: {answer} {keys}");

    // The labelling panel stays in the trajectory's half, its table inside it.
    let (traj, labels, tab) = (
        rect(&d, "document.getElementById('traj')"),
        rect(&d, "document.getElementById('labels')"),
        rect(&d, "document.getElementById('labtab')"),
    );
    assert!(num(&tab, "right") <= num(&labels, "right") + 0.5, "{tab} overflows {labels}");
    assert!(num(&labels, "right") <= num(&traj, "right") + 0.5, "{labels} overflows {traj}");
    // No cell of the trials table is drawn over the trajectory's half.
    let over = d.js(
        "var l=document.getElementById('left'),t=document.getElementById('traj').getBoundingClientRect().left;\
         var clip=getComputedStyle(l).overflowX==='visible'?Infinity:l.getBoundingClientRect().right;\
         return [...document.querySelectorAll('table.trials td,table.trials th')].filter(c=>Math.min(c.getBoundingClientRect().right,clip)>t+0.5).length",
    );
    assert_eq!(over, json!(0), "cells of the trials table overlap the trajectory");
    // A criterion reads on a line or two, not a word per line.
    let lines = d.js("return document.querySelector('#labtab td.crit span').getClientRects().length");
    assert!(lines.as_u64().unwrap() <= 2, "the criterion wraps onto {lines} lines");
    assert_eq!(d.js("return window.__evalua_errors"), json!([]));
}

#[test]
fn an_interleaved_runs_agents_are_told_apart_and_paired_in_a_list_that_fits_1280() {
    let Some(d) = Driver::start() else { return };
    let dir = project(&[]);
    let runs = dir.path().join("runs");
    let abl = runs.join("ablation");
    let args = ["run", "suites/refunds_ablation.lua", "--agent", "full", "--agent", "no_retry", "--agent", "no_memory"];
    let o = evalua(&repo(), &[&args[..], &["-q", "--out", abl.to_str().unwrap()]].concat());
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "-q", "--out", runs.join("refunds").to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v = Viewer::start(dir.path(), &["runs"]);
    let list = v.runs();
    let parts: Vec<&Value> = list.iter().filter(|r| r["suite"] == "refunds_ablation").collect();
    assert_eq!(parts.len(), 3, "{list:?}");
    let base = parts.iter().find(|r| r["interleaved"]["agent"] == "full").expect("the base agent's row");
    for p in &parts {
        let agent = p["interleaved"]["agent"].as_str().unwrap();
        assert_eq!(p["interleaved"]["agents"], json!(["full", "no_retry", "no_memory"]), "{p}");
        let want = if agent == "full" { Value::Null } else { base["id"].clone() };
        assert_eq!(p["interleaved"]["base_id"], want, "{p}");
    }

    at_1280(&d);
    d.goto(&format!("{}/", v.base));
    wait_js(&d, "return document.querySelectorAll('#runs tbody tr').length", &json!(4));
    d.screenshot("view-list-interleaved-1280.png");
    let (sw, cw) =
        (d.js("return document.documentElement.scrollWidth"), d.js("return document.documentElement.clientWidth"));
    assert!(sw.as_u64().unwrap() <= cw.as_u64().unwrap(), "the runs list is {sw} px wide in a {cw} px window");
    // Each agent's row says which agent it is; the two others link to their paired view.
    let agents = d.js("return [...document.querySelectorAll('#runs tbody div.agent b')].map(b=>b.innerText).sort()");
    assert_eq!(agents, json!(["full", "no_memory", "no_retry"]));
    let links = d.js("return [...document.querySelectorAll('#runs a.paired')].map(a=>a.getAttribute('href'))");
    let links: Vec<String> = links.as_array().unwrap().iter().map(|h| h.as_str().unwrap().to_string()).collect();
    assert_eq!(links.len(), 2, "{links:?}");
    for href in &links {
        assert!(href.starts_with(&format!("/compare?a={}&b=", enc(base["id"].as_str().unwrap()))), "{href}");
        let (status, page) = v.get(href);
        assert_eq!(status, 200, "{href}: {page}");
    }
    d.goto(&format!("{}{}", v.base, links[0]));
    wait_js(&d, "return document.body.getAttribute('data-ready')", &json!("1"));
    let text = d.js("return document.body.innerText").as_str().unwrap().to_string();
    assert!(text.contains("refunds_ablation"), "{text}");
    d.screenshot("view-paired-1280.png");
    assert_eq!(d.js("return window.__evalua_errors"), json!([]));
}
