// evalua view: the page script of the run list, a run, and a comparison.
// Every value from a run dir is put into the page as text (textContent,
// text nodes), never parsed as markup; the one exception is the run's
// figures section, which the server renders with every value escaped.
(function () {
  "use strict";
  window.__evalua_errors = [];
  window.addEventListener("error", function (e) { window.__evalua_errors.push(String(e.message)); });
  window.addEventListener("unhandledrejection", function (e) { window.__evalua_errors.push(String(e.reason)); });

  var $ = function (id) { return document.getElementById(id); };

  // el("td", {class: "x", title: "..."}, child, "text", ...): children are nodes or text.
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k === "href") e.setAttribute("href", v);
        else e.setAttribute(k, v === true ? "" : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var kid = arguments[i];
      if (kid === null || kid === undefined) continue;
      e.appendChild(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }

  function getJSON(url) {
    return fetch(url, { headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error(j && j.error ? j.error : "HTTP " + r.status);
        return j;
      });
    });
  }

  function pct(v) { return v === null || v === undefined ? "–" : (v * 100).toFixed(1) + "%"; }
  // A figure and, smaller, its 95% interval.
  function fig(f) {
    if (!f || f.value === null || f.value === undefined) return el("span", { class: "meta" }, "–");
    var iv = f.low !== null && f.low !== undefined ? el("span", { class: "iv" }, " [" + pct(f.low) + ", " + pct(f.high) + "]") : null;
    return el("span", { class: "fig" }, pct(f.value), iv);
  }
  function when(s) {
    if (!s) return "";
    var d = new Date(s);
    return isNaN(d.getTime()) ? s : d.toLocaleString();
  }
  function jsonText(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "string") return v;
    var flat = JSON.stringify(v);
    return flat.length <= 100 ? flat : JSON.stringify(v, null, 2);
  }
  function ready() {
    document.body.setAttribute("data-ready", "1");
    document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  }
  function qs(params) {
    var u = new URLSearchParams();
    Object.keys(params).forEach(function (k) {
      if (params[k] !== "" && params[k] !== null && params[k] !== undefined) u.set(k, params[k]);
    });
    return u.toString();
  }
  function visible() { return document.visibilityState !== "hidden"; }

  // ---------------------------------------------------------------- run list
  function listPage() {
    var stamp = "", runs = [], chosen = {};
    function kindText(r) {
      if (r.interleaved) return "interleaved";
      if (r.kind === "graded") return "graded";
      if (r.kind === "regraded") return "regraded";
      return r.merged ? "run (merged)" : "run";
    }
    function statusText(r) {
      if (r.error) return "unreadable";
      if (r.status === "running") return "running · " + r.figures.trials_all + " of " + r.trials_planned;
      if (r.status === "incomplete") return "incomplete · " + r.figures.trials_all + " of " + r.trials_planned;
      return "complete";
    }
    function updateButton() {
      var ids = Object.keys(chosen);
      var picked = runs.filter(function (r) { return chosen[r.id]; });
      var ok = picked.length === 2 && picked[0].suite === picked[1].suite;
      $("cmp").disabled = !ok;
      $("cmp").title = ids.length === 2 && !ok ? "the two runs are of different suites" : "";
    }
    function draw() {
      var sel = $("suite"), keep = sel.value;
      var suites = Array.from(new Set(runs.map(function (r) { return r.suite; }).filter(Boolean))).sort();
      while (sel.options.length > 1) sel.remove(1);
      suites.forEach(function (s) { sel.appendChild(el("option", { value: s }, s)); });
      sel.value = suites.indexOf(keep) >= 0 ? keep : "";
      var body = $("runs").tBodies[0];
      body.textContent = "";
      runs.filter(function (r) { return !sel.value || r.suite === sel.value; }).forEach(function (r) {
        var f = r.figures, g = r.gates;
        var box = el("input", { type: "checkbox", "data-id": r.id, "aria-label": "select for compare" });
        box.checked = !!chosen[r.id];
        box.addEventListener("change", function () {
          if (box.checked) chosen[r.id] = true; else delete chosen[r.id];
          updateButton();
        });
        var gates = g.total === 0 ? el("span", { class: "meta" }, "none")
          : el("span", { class: g.failed ? "bad" : "ok", title: g.lines.join("\n") },
            g.failed ? g.failed + " of " + g.total + " failed" : "all " + g.total + " passed");
        var link = el("a", { href: "/run?" + qs({ r: r.id }) }, r.path);
        // One agent's part of an interleaved run: which agent, and its paired view against the base agent.
        var part = r.interleaved, who = null;
        if (part) {
          who = el("div", { class: "agent" }, "agent ", el("b", null, part.agent),
            part.agents[0] === part.agent ? el("span", { class: "meta" }, " (base of " + part.agents.length + ")")
              : part.base_id ? el("a", { class: "paired", href: "/compare?" + qs({ a: part.base_id, b: r.id }) },
                " paired with " + part.agents[0] + " →") : null);
        }
        body.appendChild(el("tr", { "data-id": r.id, class: r.error ? "unreadable" : null },
          el("td", null, box),
          el("td", null, el("b", null, r.suite), who),
          el("td", null, r.version || ""),
          el("td", { title: r.started_at }, when(r.started_at)),
          el("td", null, el("span", { class: "badge k-" + r.kind }, kindText(r)),
            r.regraded_from ? el("div", { class: "meta from" }, "from " + r.regraded_from) : null),
          el("td", null, el("span", { class: "badge s-" + (r.error ? "error" : r.status), title: r.error || "" }, statusText(r))),
          el("td", { title: f.cases + " cases; " + f.trials + " trials counted (capability view), " + f.trials_all + " in all" }, String(f.trials)),
          el("td", null, fig(f.accepted)),
          el("td", null, el("span", { class: "meta" }, "pass^" + f.k + " "), fig(f.pass_hat)),
          el("td", null, el("span", { class: "meta" }, "pass@" + f.k + " "), fig(f.pass_at)),
          el("td", { class: f.critical_failures ? "bad" : null }, String(f.critical_failures)),
          el("td", null, f.grader_errors + " / " + f.infra_errors),
          el("td", null, gates),
          el("td", { class: "path" }, link, r.error ? el("div", { class: "err" }, r.error) : null)));
      });
      var empty = $("empty");
      empty.hidden = runs.length > 0;
      empty.textContent = "No run dir under " + ($("roots").textContent || "these folders") +
        " yet. Runs written there (evalua run SUITE.lua) appear here as they start.";
      updateButton();
    }
    function poll() {
      if (!visible()) return Promise.resolve();
      return getJSON("/api/runs?" + qs({ stamp: stamp })).then(function (j) {
        $("live").textContent = "checked " + new Date().toLocaleTimeString();
        if (j.unchanged) return;
        stamp = j.stamp;
        runs = j.runs;
        $("roots").textContent = j.roots.join(", ");
        var sk = $("skipped");
        sk.textContent = "";
        if (j.skipped.length) {
          sk.appendChild(el("h2", null, "Not shown"));
          var ul = el("ul");
          j.skipped.forEach(function (s) { ul.appendChild(el("li", null, el("code", null, s.path), ": " + s.reason)); });
          sk.appendChild(ul);
        }
        Object.keys(chosen).forEach(function (id) {
          if (!runs.some(function (r) { return r.id === id; })) delete chosen[id];
        });
        draw();
      }).catch(function (e) { $("live").textContent = "cannot reach the viewer: " + e.message; });
    }
    $("suite").addEventListener("change", draw);
    $("cmp").addEventListener("click", function () {
      var picked = runs.filter(function (r) { return chosen[r.id]; });
      if (picked.length !== 2) return;
      picked.sort(function (a, b) { return a.started_at < b.started_at ? -1 : a.started_at > b.started_at ? 1 : 0; });
      location.href = "/compare?" + qs({ a: picked[0].id, b: picked[1].id });
    });
    poll().then(ready);
    setInterval(poll, 2000);
  }

  // ---------------------------------------------------------------- one run
  function runPage() {
    var boot = JSON.parse($("boot").textContent);
    var params = new URLSearchParams(location.search);
    var FIELDS = ["case", "tag", "outcome", "check", "mode", "ended", "labels"];
    var state = { page: +(params.get("page") || 0), gpage: +(params.get("gpage") || 0), view: params.get("view") === "grid" ? "grid" : "list" };
    var version = boot.version, status = boot.status, openTrial = params.get("t");
    var NAMES = { a: "accepted", f: "failed", c: "critical", g: "grader error", i: "infra error" };

    function fill(id, items, label) {
      var s = $(id), keep = s.value || params.get(id.slice(2)) || "";
      while (s.options.length > 1) s.remove(1);
      var seen = false;
      items.forEach(function (it) {
        s.appendChild(el("option", { value: it[0] }, label(it)));
        if (it[0] === keep) seen = true;
      });
      if (keep && !seen) s.appendChild(el("option", { value: keep }, keep + " (none)"));
      s.value = keep;
    }
    function facets(f) {
      fill("f-tag", f.tags.map(function (t) { return [t]; }), function (it) { return it[0]; });
      fill("f-check", f.checks, function (it) { return it[0] + (it[2] ? " ⚑" : "") + " (" + it[1] + " failed)"; });
      fill("f-mode", f.modes, function (it) { return it[0] + " (" + it[1] + ")"; });
      fill("f-ended", f.ended, function (it) { return it[0] + " (" + it[1] + ")"; });
    }
    function filters() {
      var f = {};
      FIELDS.forEach(function (k) { f[k] = $("f-" + k).value.trim(); });
      return f;
    }
    function syncURL() {
      var f = filters();
      f.r = boot.id;
      if (state.page) f.page = state.page;
      if (state.gpage) f.gpage = state.gpage;
      if (state.view === "grid") f.view = "grid";
      if (openTrial) f.t = openTrial;
      history.replaceState(null, "", "/run?" + qs(f));
    }
    function pager(nav, page, pages, go) {
      nav.textContent = "";
      if (pages <= 1) return;
      var prev = el("button", { type: "button", disabled: page <= 0 }, "‹ previous");
      var next = el("button", { type: "button", disabled: page >= pages - 1 }, "next ›");
      prev.addEventListener("click", function () { go(page - 1); });
      next.addEventListener("click", function () { go(page + 1); });
      nav.appendChild(prev);
      nav.appendChild(el("span", { class: "meta" }, " page " + (page + 1) + " of " + pages + " "));
      nav.appendChild(next);
    }
    function showError(where, e) {
      where.textContent = "";
      where.appendChild(el("p", { class: "err" }, e.message || String(e)));
    }
    function loadList() {
      var q = filters(); q.r = boot.id; q.page = state.page; q.per = 50;
      return getJSON("/api/trials?" + qs(q)).then(function (j) {
        var pages = Math.max(1, Math.ceil(j.total / j.per));
        if (state.page >= pages && state.page > 0) { state.page = pages - 1; return loadList(); }
        $("count").textContent = j.total + (j.total === 1 ? " trial matches" : " trials match") + " (of " + boot.facets.trials + ")";
        $("count").setAttribute("data-total", String(j.total));
        var body = $("trials").tBodies[0];
        body.textContent = "";
        j.rows.forEach(function (r) {
          var tr = el("tr", { class: "t o-" + r.outcome, "data-case": r.case, "data-trial": r.trial, tabindex: "0" },
            el("td", null, el("code", null, r.case)),
            el("td", null, String(r.trial)),
            el("td", null, el("span", { class: "oc o-" + r.outcome }, r.outcome.replace("_", " "))),
            el("td", null, r.ended),
            el("td", null, r.failed.concat(r.errored.map(function (c) { return c + " (error)"; })).join(", ")),
            el("td", null, r.modes.join(", ")),
            el("td", null, String(r.calls)),
            el("td", null, String(Math.round(r.wall_ms))));
          if (openTrial === r.case + "#" + r.trial) tr.classList.add("sel");
          body.appendChild(tr);
        });
        if (!j.rows.length) body.appendChild(el("tr", null, el("td", { colspan: "8", class: "hint" }, "No trial matches these filters.")));
        pager($("pager"), state.page, pages, function (p) { state.page = p; syncURL(); loadList(); });
      }).catch(function (e) { showError($("pager"), e); $("count").textContent = ""; });
    }
    function loadGrid() {
      var q = filters(); q.r = boot.id; q.page = state.gpage;
      return getJSON("/api/grid?" + qs(q)).then(function (j) {
        var g = $("grid");
        g.textContent = "";
        j.rows.forEach(function (row) {
          var div = el("div", { class: "gr" },
            el("span", { class: "id", title: row.id }, row.id),
            el("span", { class: "rate" }, row.accepted + "/" + row.n));
          for (var i = 0; i < row.cells.length; i++) {
            var c = row.cells[i], t = row.trials[i];
            var cell = el("span", { class: "cell o-" + c + (row.matched && row.matched[i] === "0" ? " dim" : ""),
              "data-case": row.id, "data-trial": t, title: row.id + " #" + t + ": " + NAMES[c] });
            if (openTrial === row.id + "#" + t) cell.classList.add("sel");
            div.appendChild(cell);
          }
          if (row.more) div.appendChild(el("span", { class: "meta" }, " +" + row.more + " more (see the list)"));
          g.appendChild(div);
        });
        if (!j.rows.length) g.appendChild(el("p", { class: "hint" }, "No case to show."));
        pager($("gpager"), state.gpage, Math.max(1, Math.ceil(j.total / j.per)), function (p) { state.gpage = p; syncURL(); loadGrid(); });
      }).catch(function (e) { showError($("grid"), e); });
    }
    function reload() { return state.view === "grid" ? Promise.all([loadGrid(), countOnly()]) : loadList(); }
    function countOnly() {
      var q = filters(); q.r = boot.id; q.per = 1;
      return getJSON("/api/trials?" + qs(q)).then(function (j) {
        $("count").textContent = j.total + (j.total === 1 ? " trial matches" : " trials match") + " (of " + boot.facets.trials + ")";
        $("count").setAttribute("data-total", String(j.total));
      });
    }
    function setView(v) {
      state.view = v;
      $("listview").hidden = v !== "list";
      $("gridview").hidden = v !== "grid";
      $("tab-list").classList.toggle("on", v === "list");
      $("tab-grid").classList.toggle("on", v === "grid");
      syncURL();
      return reload();
    }

    // -- one trial
    function section(box, title, node) { box.appendChild(el("h4", null, title)); box.appendChild(node); }
    function pre(v) { return el("pre", null, jsonText(v)); }
    function showTrial(cs, trial) {
      openTrial = cs + "#" + trial;
      syncURL();
      document.querySelectorAll(".sel").forEach(function (x) { x.classList.remove("sel"); });
      document.querySelectorAll("[data-case][data-trial]").forEach(function (x) {
        if (x.getAttribute("data-case") === cs && x.getAttribute("data-trial") === String(trial)) x.classList.add("sel");
      });
      var box = $("traj");
      box.textContent = "";
      box.appendChild(el("p", { class: "hint" }, "Loading " + cs + " #" + trial + "…"));
      return getJSON("/api/trial?" + qs({ r: boot.id, case: cs, trial: trial })).then(function (v) {
        var rec = v.record, tr = v.trace;
        box.textContent = "";
        box.appendChild(el("h3", { id: "trajtitle" }, rec.case + " · trial " + rec.trial + " · ",
          el("span", { class: rec.outcome === "accepted" ? "pass" : "fail" }, rec.outcome), " · ended " + rec.ended));
        var links = el("p", { class: "links" });
        if (v.trace_file) links.appendChild(el("a", { href: "/file?" + qs({ r: boot.id, path: v.trace_file }), target: "_blank", rel: "noopener" }, "raw trace"));
        else if (tr) links.appendChild(el("a", { href: "/trace?" + qs({ r: boot.id, case: rec.case, trial: rec.trial }), target: "_blank", rel: "noopener" }, "raw trace"));
        if (v.trace_store && /^https?:\/\//.test(v.trace_store)) {
          links.appendChild(document.createTextNode(" · "));
          links.appendChild(el("a", { href: v.trace_store, target: "_blank", rel: "noopener noreferrer", id: "tracestore" }, "trace in the trace store"));
        }
        links.appendChild(el("span", { class: "meta" }, " · conversation id " + v.conversation_id + " · seed " + rec.seed));
        box.appendChild(links);
        if (rec.error) box.appendChild(el("p", { class: "err" }, "error: " + rec.error));
        if (v.failure_modes.length) box.appendChild(el("p", { class: "fail" }, "failure modes: " + v.failure_modes.join(", ")));
        if (v.trace_error) box.appendChild(el("p", { class: "hint" }, v.trace_error));
        // The task and the answer first, the labelling keys right under them: what is judged stays in view.
        if (tr && tr.input) section(box, "Task", pre(tr.input));
        section(box, "Answer", pre(rec.answer));
        renderLabels(box, v.labels, rec);

        var checks = el("table", { class: "checks" });
        rec.checks.forEach(function (k) {
          var st = k.passed === true ? el("span", { class: "pass" }, "pass")
            : k.passed === false ? el("span", { class: "fail" }, "FAIL")
            : el("span", { class: "err" }, k.skipped ? "skipped" : "error");
          checks.appendChild(el("tr", { class: "check" }, el("td", null, st),
            el("td", null, k.name, k.critical ? " ⚑ critical" : ""),
            el("td", null, pre(jsonText(k.evidence) + (k.error ? "\n" + k.error : "")))));
        });
        section(box, "Checks and their evidence", rec.checks.length ? checks : el("p", { class: "hint" }, "no check ran"));

        if (tr) {
          var calls = el("table", { class: "calls" }, el("tr", null, el("th", null, "#"), el("th", null, "tool"),
            el("th", null, "status"), el("th", null, "arguments"), el("th", null, "result"), el("th", null, "ms")));
          tr.calls.forEach(function (c, i) {
            // An injected fault: its kind beside the status; what was planted, or that the effect happened.
            var f = c.fault, status = c.status, shown = pre(c.error ? c.error : c.result);
            if (f) {
              status += " (" + f.kind + (f.kind === "timeout" && f.handler_ran ? ", effect applied" : "") + ")";
              if (f.injected) shown = pre(jsonText(c.result) + "\n— planted at " + f.target + ": " + f.injected);
              else if (f.handler_ran && c.error) shown = pre(c.error + "\n— the handler ran and returned: " + jsonText(f.handler_result));
            }
            calls.appendChild(el("tr", { class: "call" }, el("td", null, String(i + 1)), el("td", null, c.name),
              el("td", { class: "st-" + c.status }, status), el("td", null, pre(c.args)),
              el("td", null, shown), el("td", null, String(Math.round(c.ended_ms - c.started_ms)))));
          });
          section(box, "Tool calls, in order", tr.calls.length ? calls : el("p", { class: "hint" }, "no tool call"));
        } else {
          section(box, "Tool calls, in order", el("p", { class: "hint" }, "trace file missing"));
        }
        if (tr && tr.messages && tr.messages.length) {
          var msgs = el("div", { class: "msgs" });
          tr.messages.forEach(function (m) { msgs.appendChild(el("div", { class: "msg r-" + m.role }, el("b", null, m.role + (m.call_id ? " (" + m.call_id + ")" : "")), pre(m.content))); });
          section(box, "Conversation", msgs);
        }
        if (tr && tr.outbox && tr.outbox.length) {
          var ob = el("table", { class: "outbox" });
          tr.outbox.forEach(function (o) { ob.appendChild(el("tr", null, el("td", null, o.kind), el("td", null, o.to), el("td", null, pre(o.body)))); });
          section(box, "Outbox (what the agent sent)", ob);
        }
        if (v.files.length || v.changeset) {
          var ul = el("ul", { class: "files" });
          v.files.forEach(function (f) { ul.appendChild(el("li", null, el("a", { href: "/file?" + qs({ r: boot.id, path: f }), target: "_blank", rel: "noopener" }, f))); });
          if (v.changeset) ul.appendChild(el("li", null, el("a", { href: "/file?" + qs({ r: boot.id, path: v.changeset }) }, v.changeset), " (database changes, a SQLite changeset)"));
          section(box, "Final state kept by the run", ul);
        }
        var u = rec.usage;
        section(box, "Usage", el("p", null, u.turns + " turns · " + u.tool_calls + " tool calls · " + u.input_tokens + " in / " + u.output_tokens + " out tokens · $" + (u.cost_usd || 0).toFixed(4) + " · " + Math.round(rec.wall_ms) + " ms"));
        if (tr && tr.model_calls && tr.model_calls.length) {
          var mc = el("table", { class: "models" }, el("tr", null, el("th", null, "by"), el("th", null, "model"), el("th", null, "tokens in / out"), el("th", null, "ms"), el("th", null, "error")));
          tr.model_calls.forEach(function (m) { mc.appendChild(el("tr", null, el("td", null, m.by), el("td", null, m.provider + " " + m.model), el("td", null, m.input_tokens + " / " + m.output_tokens), el("td", null, String(Math.round(m.latency_ms))), el("td", null, m.error || ""))); });
          section(box, "Model calls", mc);
        }
        if (tr && tr.log && tr.log.length) section(box, "Log", pre(tr.log.join("\n")));
        if (tr && tr.stderr_tail) section(box, "Agent stderr (tail)", pre(tr.stderr_tail));
        var top = box.getBoundingClientRect().top;
        if (top < 0 || top > window.innerHeight * 0.6) box.scrollIntoView({ block: "start" });
      }).catch(function (e) { showError(box, e); });
    }
    // -- labelling: one row per rubric criterion of the trial's case, and the trial as a whole
    var lab = null;      // the open trial's labels: { cs, trial, L, focus, drafts }
    var saved = 0;       // labels saved in this page (tests and benchmarks wait on it)
    window.__evalua_label_ms = [];
    function critOf(i) { return lab.L.criteria[i].criterion; }
    function mineOf(i) {
      var c = critOf(i);
      for (var k = 0; k < lab.L.mine.length; k++) if (lab.L.mine[k].criterion === c) return lab.L.mine[k];
      return null;
    }
    function firstOpen() {
      for (var i = 0; i < lab.L.criteria.length; i++) if (!mineOf(i)) return i;
      return 0;
    }
    function drawLabels() {
      var rows = document.querySelectorAll("#labtab tr.lab");
      rows.forEach(function (tr, i) {
        var m = mineOf(i), d = lab.drafts[i];
        tr.classList.toggle("focus", i === lab.focus);
        tr.setAttribute("data-verdict", m ? m.verdict : "");
        tr.querySelectorAll("button.v").forEach(function (b) {
          b.classList.toggle("on", !!m && b.getAttribute("data-v") === m.verdict);
        });
        var chips = tr.querySelector(".chips");
        chips.textContent = "";
        d.tags.forEach(function (t) {
          var x = el("button", { type: "button", class: "x", title: "remove this tag" }, "×");
          x.addEventListener("click", function () {
            d.tags = d.tags.filter(function (y) { return y !== t; });
            if (mineOf(i)) post(i, mineOf(i).verdict); else drawLabels();
          });
          chips.appendChild(el("span", { class: "tag" }, t, x));
        });
        var note = tr.querySelector("input.note-in");
        if (document.activeElement !== note) note.value = d.note;
        tr.querySelector(".saved").textContent = m ? "saved " + new Date(m.at).toLocaleTimeString() : (d.tags.length || d.note ? "not saved: give a verdict" : "");
      });
      var done = lab.L.criteria.filter(function (_, i) { return !!mineOf(i); }).length;
      $("labstate").textContent = done + " of " + lab.L.criteria.length + " labelled by you";
      $("labels").setAttribute("data-saved", String(saved));
    }
    function renderLabels(box, L, rec) {
      var sec = el("section", { id: "labels", class: "labels" });
      sec.appendChild(el("h4", null, "Your labels"));
      box.appendChild(sec);
      if (!L || !L.enabled) {
        lab = null;
        sec.appendChild(el("p", { class: "hint", id: "labels-off" }, L ? L.why : "labelling is off"));
        return;
      }
      lab = { cs: rec.case, trial: rec.trial, L: L, focus: 0, drafts: [] };
      L.criteria.forEach(function (_, i) {
        var m = mineOf(i);
        lab.drafts.push({ tags: m ? m.tags.slice() : [], note: m ? m.note : "" });
      });
      lab.focus = firstOpen();
      sec.appendChild(el("p", { class: "meta" }, "as ", el("b", null, L.annotator), " · ", el("span", { id: "labstate" }),
        " · store ", el("code", null, L.store), " · item ", el("code", null, L.item),
        L.others ? " · " + L.others + " other annotator" + (L.others > 1 ? "s" : "") + " labelled this trial (not shown: labels stay independent)" : ""));
      var dl = el("datalist", { id: "tagsugg" });
      L.tags.forEach(function (t) { dl.appendChild(el("option", { value: t })); });
      sec.appendChild(dl);
      var tab = el("table", { id: "labtab", class: "labtab" });
      L.criteria.forEach(function (c, i) {
        var buttons = el("td", { class: "vs" });
        [["pass", "pass (p)"], ["fail", "fail (f)"], ["unsure", "can't tell (u)"]].forEach(function (b) {
          var btn = el("button", { type: "button", class: "v v-" + b[0], "data-v": b[0] }, b[1]);
          btn.addEventListener("click", function () { lab.focus = i; post(i, b[0]); });
          buttons.appendChild(btn);
        });
        var tagIn = el("input", { class: "tag-in", list: "tagsugg", placeholder: "failure mode (t)", size: "22" });
        var noteIn = el("input", { class: "note-in", placeholder: "note (c)", size: "28" });
        tagIn.addEventListener("change", function () { if (tagIn.value.trim()) commitField(tagIn); });
        noteIn.addEventListener("change", function () { commitField(noteIn); });
        [tagIn, noteIn].forEach(function (x) { x.addEventListener("focus", function () { lab.focus = i; drawLabels(); }); });
        var name = c.criterion === null ? el("i", null, "the trial as a whole") : el("span", null, c.criterion);
        var tr = el("tr", { class: "lab", "data-i": i },
          el("td", { class: "crit" }, name, c.rubric ? el("div", { class: "meta" }, c.rubric) : null),
          buttons,
          el("td", null, el("span", { class: "chips" }), tagIn),
          el("td", null, noteIn),
          el("td", { class: "saved meta" }));
        tr.addEventListener("click", function (e) { if (e.target === tr || e.target.tagName === "TD") { lab.focus = i; drawLabels(); } });
        tab.appendChild(tr);
      });
      sec.appendChild(tab);
      sec.appendChild(el("p", { class: "meta keys" },
        "keys: p pass · f fail · u can't tell · j / k (↓ / ↑) criterion · t failure mode · c note · Enter saves a field, Esc leaves it · n / N next / previous unlabelled trial of the filtered list"));
      sec.appendChild(el("p", { class: "meta", id: "queue" }));
      if (L.warning_count) {
        var w = el("details", { class: "warn" }, el("summary", null, L.warning_count + " line(s) of the store are not labels and were skipped"));
        L.warnings.forEach(function (x) { w.appendChild(el("div", null, x)); });
        sec.appendChild(w);
      }
      drawLabels();
    }
    function post(i, verdict, started) {
      var d = lab.drafts[i], mine = lab, t0 = started || performance.now();
      var body = { r: boot.id, case: lab.cs, trial: lab.trial, criterion: critOf(i), verdict: verdict, tags: d.tags, note: d.note };
      return fetch("/api/label", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Evalua-Token": boot.token, Accept: "application/json" },
        body: JSON.stringify(body),
      }).then(function (r) {
        return r.json().then(function (j) {
          if (!r.ok) throw new Error(j && j.error ? j.error : "HTTP " + r.status);
          return j;
        });
      }).then(function (L) {
        if (lab !== mine) return;      // another trial was opened meanwhile
        lab.L = L;
        saved += 1;
        drawLabels();
        window.__evalua_label_ms.push(performance.now() - t0);
      }).catch(function (e) {
        if (lab === mine) { $("queue").textContent = "not saved: " + e.message; $("queue").className = "err"; }
      });
    }
    function verdict(v) {
      if (!lab) return;
      var i = lab.focus, t0 = performance.now();
      if (i < lab.L.criteria.length - 1) lab.focus = i + 1;
      drawLabels();
      post(i, v, t0);
    }
    function commitField(input) {
      var tr = input.closest("tr.lab");
      if (!tr || !lab) return;
      var i = +tr.getAttribute("data-i"), d = lab.drafts[i];
      if (input.classList.contains("tag-in")) {
        var t = input.value.trim();
        input.value = "";
        if (t && d.tags.indexOf(t) < 0) d.tags.push(t);
      } else {
        d.note = input.value;
      }
      var m = mineOf(i);
      if (m) post(i, m.verdict); else drawLabels();
    }
    function move(by) {
      if (!lab) return;
      lab.focus = Math.max(0, Math.min(lab.L.criteria.length - 1, lab.focus + by));
      drawLabels();
    }
    function focusField(cls) {
      if (!lab) return;
      var tr = document.querySelector("#labtab tr.lab[data-i='" + lab.focus + "']");
      var x = tr && tr.querySelector("input." + cls);
      if (x) x.focus();
    }
    function nextTrial(dir) {
      var q = filters(); q.r = boot.id; q.dir = dir;
      delete q.labels;
      var m = openTrial && /^(.*)#(\d+)$/.exec(openTrial);
      if (m) { q.from_case = m[1]; q.from_trial = m[2]; }
      return getJSON("/api/next?" + qs(q)).then(function (j) {
        if (j.case === null) {
          var where = $("queue") || $("traj");
          where.textContent = "No " + (dir === "prev" ? "earlier" : "later") + " trial of this list is left to label (" + j.left + " unlabelled in all).";
          return;
        }
        return showTrial(j.case, j.trial).then(function () {
          if ($("queue")) $("queue").textContent = j.left + " trial(s) of this list not labelled by you yet";
        });
      }).catch(function (e) { showError($("traj"), e); });
    }
    document.addEventListener("keydown", function (e) {
      var t = e.target, tag = t && t.tagName;
      if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") {
        if (lab && t.classList && (t.classList.contains("tag-in") || t.classList.contains("note-in"))) {
          if (e.key === "Enter") { e.preventDefault(); commitField(t); t.blur(); }
          else if (e.key === "Escape") { e.preventDefault(); t.blur(); }
        }
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey || !boot.annotator) return;
      var k = e.key;
      if (k === "n" || k === "N") { e.preventDefault(); nextTrial(k === "N" ? "prev" : "next"); return; }
      if (!lab) return;
      if (k === "p") verdict("pass");
      else if (k === "f") verdict("fail");
      else if (k === "u" || k === "?") verdict("unsure");
      else if (k === "j" || k === "ArrowDown") move(1);
      else if (k === "k" || k === "ArrowUp") move(-1);
      else if (k === "t") focusField("tag-in");
      else if (k === "c") focusField("note-in");
      else return;
      e.preventDefault();
    });

    function clickTrial(e) {
      var t = e.target.closest("[data-case][data-trial]");
      if (t) showTrial(t.getAttribute("data-case"), +t.getAttribute("data-trial"));
    }
    $("trials").addEventListener("click", clickTrial);
    $("trials").addEventListener("keydown", function (e) { if (e.key === "Enter") clickTrial(e); });
    $("grid").addEventListener("click", clickTrial);

    // -- live: a run still writing
    function poll() {
      if (status !== "running" || !visible()) return;
      getJSON("/api/run?" + qs({ r: boot.id, v: version })).then(function (j) {
        if (j.status !== status) {
          status = j.status;
          var b = $("status");
          b.textContent = status;
          b.className = "badge s-" + status;
        }
        if (j.version !== version && j.overview !== undefined) {
          version = j.version;
          $("overview").innerHTML = j.overview; // rendered by the server, every value escaped
          boot.facets = j.facets;
          facets(j.facets);
          reload();
        }
      }).catch(function () {});
    }

    // -- start
    FIELDS.forEach(function (k) {
      var input = $("f-" + k);
      if (params.get(k)) input.value = params.get(k);
      input.addEventListener(k === "case" ? "input" : "change", function () {
        state.page = 0; state.gpage = 0; syncURL(); reload();
      });
    });
    facets(boot.facets);
    FIELDS.forEach(function (k) { if (params.get(k)) $("f-" + k).value = params.get(k); });
    $("f-clear").addEventListener("click", function () {
      FIELDS.forEach(function (k) { $("f-" + k).value = ""; });
      state.page = 0; state.gpage = 0; syncURL(); reload();
    });
    $("tab-list").addEventListener("click", function () { setView("list"); });
    $("tab-grid").addEventListener("click", function () { setView("grid"); });
    if (!boot.annotator) {
      $("f-labels").disabled = true;
      $("f-labels").parentNode.title = "start evalua view with --annotator NAME to label trials";
    }
    var cw = $("cmpwith");
    boot.others.forEach(function (o) { cw.appendChild(el("option", { value: o[0] }, o[1])); });
    cw.disabled = boot.others.length === 0;
    cw.addEventListener("change", function () {
      if (cw.value) location.href = "/compare?" + qs({ a: cw.value, b: boot.id });
    });
    var first = setView(state.view);
    var m = openTrial && /^(.*)#(\d+)$/.exec(openTrial);
    Promise.all([first, m ? showTrial(m[1], +m[2]) : null]).then(ready, ready);
    setInterval(poll, 2000);
  }

  function start() {
    var p = document.body.getAttribute("data-page");
    if (p === "list") listPage();
    else if (p === "run") runPage();
    else ready();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
