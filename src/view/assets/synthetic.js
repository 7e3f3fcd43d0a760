// evalua view --review synthetic: the drafted cases awaiting review, each
// with Approve / Reject (SPEC §23). No framework; text is set with
// textContent only.
(function () {
  "use strict";
  var boot = JSON.parse(document.getElementById("boot").textContent);
  var box = document.getElementById("queue");
  function el(tag, text) { var e = document.createElement(tag); if (text != null) e.textContent = text; return e; }
  function decide(q, decision, note, line) {
    fetch("/api/synthetic", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Evalua-Token": boot.token, Accept: "application/json" },
      body: JSON.stringify({ suite: q.suite, case: q.case, decision: decision, note: note })
    }).then(function (r) { return r.json().then(function (j) { return [r.ok, j]; }); })
      .then(function (x) { line.textContent = x[0] ? (x[1].status + " by " + x[1].reviewer) : ("error: " + x[1].error); if (x[0]) load(); });
  }
  function show(q) {
    var s = el("section"), d = q.draft;
    s.appendChild(el("h2", q.case + (d.family ? " (" + d.family + ")" : "")));
    s.appendChild(el("p", "suite " + q.suite + " · run " + q.r + " · " + q.accepted + " of " + q.trials + " trials accepted"));
    s.appendChild(el("p", "input: " + (d.input || "")));
    s.appendChild(el("pre", "expected: " + JSON.stringify(d.expect_sql || [], null, 1) + "\nprohibited: " + JSON.stringify(d.prohibited || [], null, 1) +
      "\nreference: " + JSON.stringify((d.reference || {}).calls || [], null, 1) + (d.rationale ? "\nwhy: " + d.rationale : "")));
    var note = el("input"); note.placeholder = "note (optional)"; note.size = 60;
    var line = el("span"), ok = el("button", "Approve"), no = el("button", "Reject");
    ok.type = no.type = "button";
    ok.onclick = function () { decide(q, "approve", note.value, line); };
    no.onclick = function () { decide(q, "reject", note.value, line); };
    [note, ok, no, line].forEach(function (x) { s.appendChild(x); });
    box.appendChild(s);
  }
  function load() {
    fetch("/api/synthetic", { headers: { Accept: "application/json" } }).then(function (r) { return r.json(); }).then(function (j) {
      box.textContent = "";
      if (!j.queue.length) box.appendChild(el("p", "No drafted case awaits review in these runs."));
      j.queue.forEach(show);
    });
  }
  load();
})();
