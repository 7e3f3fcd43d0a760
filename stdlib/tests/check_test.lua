-- stdlib/tests/check_test.lua: every built-in check of evalua.check on trials
-- it must reject and accept (`evalua test stdlib/tests`). Each group starts
-- with a must-fail example: a check never seen to fail is not known to work.

local evalua = require("evalua")   -- also a global in test files; the local keeps editors quiet
local check = require("evalua.check")

local SCHEMA = "fixtures/shop.sql"   -- beside this file

local function call(name, args, status, effect, extra)
  local c = { name = name, args = args or {}, status = status or "executed", effect = effect or "read" }
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end

local refund = "INSERT INTO refunds(order_id, amount) VALUES ('P-1', 19.9)"

return {
  -- Final state -------------------------------------------------------------
  evalua.grader_tests(check.sql("SELECT amount FROM refunds WHERE order_id = 'P-1'", { equals = 19.90, tolerance = 0.005 }), {
    { name = "no row", expect = "fail", db = { schema = SCHEMA } },
    { name = "wrong amount", expect = "fail", db = { schema = SCHEMA, sql = "INSERT INTO refunds(order_id, amount) VALUES ('P-1', 59.7)" } },
    { name = "within tolerance", expect = "pass", db = { schema = SCHEMA, sql = "INSERT INTO refunds(order_id, amount) VALUES ('P-1', 19.902)" } },
  }),
  evalua.grader_tests(check.sql("SELECT order_id, amount FROM refunds", { rows = { { "P-1", 19.9 }, { "P-2", 5 } } }), {
    { name = "a row missing", expect = "fail", db = { schema = SCHEMA, sql = refund } },
    { name = "an extra row", expect = "fail", db = { schema = SCHEMA, sql = refund .. "; INSERT INTO refunds(order_id, amount) VALUES ('P-2', 5), ('P-3', 1)" } },
    { name = "same rows, any order", expect = "pass", db = { schema = SCHEMA, sql = "INSERT INTO refunds(order_id, amount) VALUES ('P-2', 5); " .. refund } },
  }),
  evalua.grader_tests(check.sql("SELECT order_id FROM refunds ORDER BY id", { rows = { { "P-1" }, { "P-2" } }, ordered = true }), {
    { name = "other order", expect = "fail", db = { schema = SCHEMA, sql = "INSERT INTO refunds(order_id, amount) VALUES ('P-2', 1), ('P-1', 1)" } },
    { name = "in order", expect = "pass", db = { schema = SCHEMA, sql = "INSERT INTO refunds(order_id, amount) VALUES ('P-1', 1), ('P-2', 1)" } },
  }),
  evalua.grader_tests(check.sql("SELECT count(*) FROM refunds WHERE order_id <> 'P-1'", { empty = true }), {
    { name = "a refund elsewhere", expect = "fail", db = { schema = SCHEMA, sql = "INSERT INTO refunds(order_id, amount) VALUES ('P-9', 1)" } },
    { name = "zero", expect = "pass", db = { schema = SCHEMA, sql = refund } },
  }),
  evalua.grader_tests(check.sql("SELECT * FROM no_such_table", { empty = true }), {
    { name = "a query that cannot run is a grader error", expect = "error", db = { schema = SCHEMA } },
  }),
  evalua.grader_tests(check.no_writes(), {
    { name = "a write tool executed", expect = "fail", calls = { call("issue_refund", {}, "executed", "write") } },
    { name = "the database changed", expect = "fail", db = { schema = SCHEMA, sql = refund } },
    { name = "a denied write, nothing changed", expect = "pass", db = { schema = SCHEMA },
      calls = { call("lookup", {}), call("issue_refund", {}, "denied", "write") } },
  }),
  evalua.grader_tests(check.files { ["out/report.txt"] = { contains = "total: 3" }, ["tmp.log"] = { exists = false } }, {
    { name = "report missing", expect = "fail", files = {} },
    { name = "wrong content", expect = "fail", files = { ["out/report.txt"] = "total: 2" } },
    { name = "a file that must not exist", expect = "fail", files = { ["out/report.txt"] = "total: 3", ["tmp.log"] = "x" } },
    { name = "deleted as required", expect = "pass", initial_files = { ["tmp.log"] = "x" },
      files = { ["out/report.txt"] = "total: 3\n", ["tmp.log"] = false } },
  }),
  evalua.grader_tests(check.files { ["VERSION"] = { matches = [[^\d+\.\d+\.\d+$]] } }, {
    { name = "not a version", expect = "fail", files = { VERSION = "1.2" } },
    { name = "a version", expect = "pass", files = { VERSION = "1.2.3" } },
  }),
  evalua.grader_tests(check.outbox { to = "4821", count = 1, contains = "19,90" }, {
    { name = "two emails", expect = "fail", outbox = {
      { kind = "email", to = "4821", body = "Reembolso de 19,90 €" }, { kind = "email", to = "4821", body = "19,90 €, otra vez" } } },
    { name = "to someone else", expect = "fail", outbox = { { kind = "email", to = "9999", body = "19,90 €" } } },
    { name = "one email", expect = "pass", outbox = { { kind = "email", to = "4821", body = "Reembolso de 19,90 €" } } },
  }),
  evalua.grader_tests(check.outbox { kind = "sms" }, {
    { name = "nothing sent", expect = "fail" },
    { name = "an sms", expect = "pass", outbox = { { kind = "sms", to = "+34600", body = "hola" } } },
  }),

  -- The final answer --------------------------------------------------------
  evalua.grader_tests(check.answer { equals = "done", normalize = true }, {
    { name = "other text", expect = "fail", answer = "not done" },
    { name = "case and spaces folded", expect = "pass", answer = "  DONE \n" },
  }),
  evalua.grader_tests(check.answer { contains = "19,90 €" }, {
    { name = "absent", expect = "fail", answer = "Reembolsados 59,70 €" },
    { name = "present", expect = "pass", answer = "Reembolsados 19,90 € al cliente" },
  }),
  evalua.grader_tests(check.answer { matches = [[^P-\d{4}$]] }, {
    { name = "no match", expect = "fail", answer = "order P-12" },
    { name = "match after trimming", expect = "pass", answer = " P-9930 " },
  }),
  evalua.grader_tests(check.answer { set = { "a@x.io", "b@x.io" }, extract = [[[\w.]+@[\w.]+]] }, {
    { name = "one missing", expect = "fail", answer = "a@x.io" },
    { name = "one extra", expect = "fail", answer = "a@x.io, b@x.io, c@x.io" },
    { name = "a duplicate", expect = "fail", answer = "a@x.io, b@x.io, a@x.io" },
    { name = "the set", expect = "pass", answer = "b@x.io and a@x.io" },
  }),
  evalua.grader_tests(check.answer { number = 19.9, tolerance = 0.01 }, {
    { name = "no number", expect = "fail", answer = "nothing to refund" },
    { name = "another number", expect = "fail", answer = "59,70 €" },
    { name = "decimal comma", expect = "pass", answer = "Reembolsados 19,90 €" },
  }),
  evalua.grader_tests(check.answer { datetime = "2026-11-03T10:00:00+01:00" }, {
    { name = "another instant", expect = "fail", answer = "at 2026-11-03T10:00:00Z" },
    { name = "no date", expect = "fail", answer = "tomorrow" },
    { name = "the same instant in UTC", expect = "pass", answer = "at 2026-11-03T09:00:00Z" },
  }),
  evalua.grader_tests(check.json_schema { type = "object", required = { "id" }, properties = { id = { type = "integer" } } }, {
    { name = "not JSON", expect = "fail", answer = "id: 3" },
    { name = "wrong type", expect = "fail", answer = [[{"id": "3"}]] },
    { name = "valid", expect = "pass", answer = [[ {"id": 3} ]] },
  }),

  -- The trajectory ----------------------------------------------------------
  evalua.grader_tests(check.tools({ "lookup", "verify", "refund" }, { mode = "in_order" }), {
    { name = "out of order", expect = "fail", calls = { call("lookup"), call("refund"), call("verify") } },
    { name = "one not executed", expect = "fail", calls = { call("lookup"), call("verify", {}, "denied"), call("refund") } },
    { name = "in order with extras", expect = "pass", calls = { call("lookup"), call("lookup"), call("verify"), call("refund"), call("email") } },
  }),
  evalua.grader_tests(check.tools({ "lookup", "refund" }, { mode = "exact" }), {
    { name = "an extra call", expect = "fail", calls = { call("lookup"), call("lookup"), call("refund") } },
    { name = "exactly", expect = "pass", calls = { call("lookup"), call("refund") } },
  }),
  evalua.grader_tests(check.tools({ "a", "b", "c", "d" }, { mode = "any_order", min_recall = 0.75, min_precision = 0.5 }), {
    { name = "recall too low", expect = "fail", calls = { call("a"), call("b") } },
    { name = "precision too low", expect = "fail", calls = { call("a"), call("b"), call("c"), call("x"), call("y"), call("z"), call("w") } },
    { name = "enough of them, any order", expect = "pass", calls = { call("c"), call("a"), call("b") } },
  }),
  evalua.grader_tests(check.args("refund", { order_id = "P-1", amount = check.cmp.number { 19.9, tolerance = 0.01 },
                                             reason = check.cmp.text { "Missing Unit", normalize = true } }), {
    { name = "no executed call", expect = "fail", calls = { call("refund", { order_id = "P-1", amount = 19.9 }, "denied") } },
    { name = "wrong amount", expect = "fail", calls = { call("refund", { order_id = "P-1", amount = 59.7, reason = "missing unit" }) } },
    { name = "one of two calls wrong", expect = "fail", calls = {
      call("refund", { order_id = "P-1", amount = 19.9, reason = "missing unit" }),
      call("refund", { order_id = "P-2", amount = 19.9, reason = "missing unit" }) } },
    { name = "matching", expect = "pass", calls = { call("refund", { order_id = "P-1", amount = 19.904, reason = " MISSING   unit" }) } },
  }),
  evalua.grader_tests(check.args("schedule", { at = check.cmp.datetime { "2026-11-03T10:00:00", zone = "Europe/Madrid" } }), {
    { name = "another instant", expect = "fail", calls = { call("schedule", { at = "2026-11-03T10:00:00Z" }) } },
    { name = "the same instant", expect = "pass", calls = { call("schedule", { at = "2026-11-03T09:00:00Z" }) } },
  }),
  evalua.grader_tests(check.before("verify", "refund"), {
    { name = "refund first", expect = "fail", calls = { call("refund"), call("verify") } },
    { name = "verify was denied", expect = "fail", calls = { call("verify", {}, "denied"), call("refund") } },
    { name = "verify first", expect = "pass", calls = { call("verify"), call("refund"), call("refund") } },
  }),
  -- A retried failed call: counted only when `calls = "requested"`.
  evalua.grader_tests(check.tools({ "lookup", "lookup", "refund" }, { mode = "exact" }), {
    { name = "the failed try is not executed", expect = "fail",
      calls = { call("lookup", {}, "failed"), call("lookup"), call("refund") } },
  }),
  evalua.grader_tests(check.tools({ "lookup", "lookup", "refund" }, { mode = "exact", calls = "requested" }), {
    { name = "a call missing", expect = "fail", calls = { call("lookup"), call("refund") } },
    { name = "the failed try and its retry", expect = "pass",
      calls = { call("lookup", {}, "failed"), call("lookup"), call("refund") } },
  }),
  evalua.grader_tests(check.tools({ "lookup", "refund" }, { mode = "exact", calls = "succeeded" }), {
    { name = "a result reporting an error", expect = "fail",
      calls = { call("lookup", {}, "executed", "read", { result = { error = "not found" } }), call("refund") } },
    { name = "both succeeded", expect = "pass",
      calls = { call("lookup", {}, "executed", "read", { result = { error = evalua.null } }), call("refund") } },
  }),
  -- A failed identity check is "before" by default, not with `calls = "succeeded"`.
  evalua.grader_tests(check.before("verify", "refund"), {
    { name = "refund before any verify", expect = "fail", calls = { call("refund") } },
    { name = "a verify that reported failure still counts", expect = "pass",
      calls = { call("verify", {}, "executed", "read", { result = { ok = false } }), call("refund") } },
  }),
  evalua.grader_tests(check.before("verify", "refund", { calls = "succeeded" }), {
    { name = "the verify reported failure", expect = "fail",
      calls = { call("verify", {}, "executed", "read", { result = { ok = false } }), call("refund") } },
    { name = "is_error", expect = "fail",
      calls = { call("verify", {}, "executed", "read", { result = { is_error = true } }), call("refund") } },
    { name = "a failed try, then a verify that succeeded", expect = "pass",
      calls = { call("verify", {}, "executed", "read", { result = { error = "mismatch" } }),
                call("verify", {}, "executed", "read", { result = { verified = true } }), call("refund") } },
  }),
  evalua.grader_tests(check.before("verify", "refund", { calls = "requested" }), {
    { name = "a refund requested (and denied) first", expect = "fail",
      calls = { call("refund", {}, "denied"), call("verify"), call("refund") } },
    { name = "a verify requested first", expect = "pass", calls = { call("verify", {}, "failed"), call("refund") } },
  }),
  evalua.grader_tests(check.no_loops { max_repeats = 2 }, {
    { name = "the same request three times", expect = "fail", calls = {
      call("lookup", { id = 1 }), call("lookup", { id = 1 }), call("lookup", { id = 1 }, "failed") } },
    { name = "twice, and other arguments", expect = "pass", calls = {
      call("lookup", { id = 1 }), call("lookup", { id = 1 }), call("lookup", { id = 2 }) } },
  }),
  evalua.grader_tests(check.retries { max = 1, after = "rate_limit" }, {
    { name = "hammering after a 429", expect = "fail", calls = {
      call("search", {}, "failed", "read", { error = "HTTP 429 Too Many Requests" }),
      call("search", {}, "failed", "read", { error = "HTTP 429 Too Many Requests" }),
      call("search") } },
    { name = "one retry after a 429", expect = "pass", calls = {
      call("search", {}, "failed", "read", { error = "rate limit exceeded" }), call("search") } },
    { name = "retries after another error do not count", expect = "pass", calls = {
      call("search", {}, "failed", "read", { error = "timeout" }), call("search", {}, "failed", "read", { error = "timeout" }),
      call("search") } },
  }),
  evalua.grader_tests(check.max_calls(2), {
    { name = "three requests", expect = "fail", calls = { call("a"), call("b", {}, "denied"), call("c", {}, "rejected") } },
    { name = "two requests", expect = "pass", calls = { call("a"), call("b") } },
  }),
  evalua.grader_tests(check.efficiency { max_ratio = 2 }, {
    { name = "five calls against a reference of two", expect = "fail", case = { id = "x", reference = { calls = 2 } },
      calls = { call("a"), call("b"), call("c", {}, "denied"), call("d"), call("e") } },
    { name = "tokens three times the reference", expect = "fail", case = { id = "x", reference = { calls = 2, tokens = 100 } },
      calls = { call("a") }, usage = { input_tokens = 250, output_tokens = 50 } },
    { name = "no reference: skipped, never passed", expect = "skip", case = { id = "x" }, calls = { call("a") } },
    { name = "four calls, exactly twice the reference", expect = "pass", case = { id = "x", reference = { calls = 2, tokens = 100 } },
      calls = { call("a"), call("b"), call("c"), call("d") }, usage = { input_tokens = 150, output_tokens = 50 } },
  }),
  evalua.grader_tests(check.efficiency(), {
    { name = "above the reference's own max_ratio", expect = "fail", case = { id = "x", reference = { calls = 2, max_ratio = 1.5 } },
      calls = { call("a"), call("b"), call("c"), call("d") } },
    { name = "within the reference's own max_ratio", expect = "pass", case = { id = "x", reference = { calls = 2, max_ratio = 1.5 } },
      calls = { call("a"), call("b"), call("c") } },
  }),
  evalua.grader_tests(check.efficiency { measure = "executed_calls", max_ratio = 1 }, {
    { name = "three executed against two", expect = "fail", case = { id = "x", reference = { calls = 2 } },
      calls = { call("a"), call("b"), call("c") } },
    { name = "refused calls do not count as executed", expect = "pass", case = { id = "x", reference = { calls = 2 } },
      calls = { call("a"), call("b", {}, "denied"), call("c", {}, "rejected"), call("d") } },
  }),
  evalua.grader_tests(check.claims_only_after("(?i)refunded", "refund"), {
    { name = "claim without the refund", expect = "fail", answer = "Refunded!", calls = { call("refund", {}, "denied") } },
    { name = "claim after the refund", expect = "pass", answer = "Refunded.", calls = { call("refund") } },
    { name = "no claim", expect = "pass", answer = "I could not do it." },
  }),
  evalua.grader_tests(check.ended { "final" }, {
    { name = "crashed", expect = "fail", ended = "crashed", error = "exit 1" },
    { name = "over budget", expect = "fail", ended = "budget" },
    { name = "final", expect = "pass", ended = "final" },
  }),
  evalua.grader_tests(check.abstained(), {
    { name = "answered", expect = "fail", ended = "final", answer = "Refunded." },
    { name = "crashed", expect = "fail", ended = "crashed", error = "exit 1" },
    { name = "abstained", expect = "pass", ended = "abstained", answer = "The order id is not in the evidence." },
  }),

  -- Coding agents -----------------------------------------------------------
  evalua.grader_tests(check.command { cmd = { "sh", "-c", "grep -q fixed src/app.txt" } }, {
    { name = "not fixed", expect = "fail", initial_files = { ["src/app.txt"] = "broken\n" } },
    { name = "fixed", expect = "pass", initial_files = { ["src/app.txt"] = "broken\n" }, files = { ["src/app.txt"] = "fixed\n" } },
  }),
  evalua.grader_tests(check.tests { runner = { "sh", "-c" }, fail_to_pass = { "grep -q fixed src/app.txt" },
                                    pass_to_pass = { "test -f README" } }, {
    { name = "the old test broke", expect = "fail", initial_files = { README = "r", ["src/app.txt"] = "broken" },
      files = { ["src/app.txt"] = "fixed", README = false } },
    { name = "the new test still fails", expect = "fail", initial_files = { README = "r", ["src/app.txt"] = "broken" } },
    { name = "both hold", expect = "pass", initial_files = { README = "r", ["src/app.txt"] = "broken" }, files = { ["src/app.txt"] = "fixed" } },
  }),
  evalua.grader_tests(check.scope { allowed = { "src/**" }, forbidden = { "src/secrets/**" } }, {
    { name = "a change outside", expect = "fail", files = { ["src/a.py"] = "x", ["setup.cfg"] = "y" } },
    { name = "a forbidden change", expect = "fail", files = { ["src/secrets/key"] = "k" } },
    { name = "in scope (cache ignored)", expect = "pass", files = { ["src/a.py"] = "x", ["lib/__pycache__/a.pyc"] = "c" } },
  }),
  evalua.grader_tests(check.no_secrets { patterns = { [[sk-[A-Za-z0-9]{20,}]] } }, {
    { name = "in the answer", expect = "fail", answer = "use sk-abcdefghijklmnopqrstuvwx" },
    { name = "in a tool call", expect = "fail", calls = { call("post", { body = "key sk-abcdefghijklmnopqrstuvwx" }) } },
    { name = "in the diff", expect = "fail", files = { ["config.py"] = "KEY = 'sk-abcdefghijklmnopqrstuvwx'" } },
    { name = "in the outbox", expect = "fail", outbox = { { kind = "email", to = "a", body = { text = "sk-abcdefghijklmnopqrstuvwx" } } } },
    { name = "nowhere", expect = "pass", answer = "done", files = { ["config.py"] = "KEY = os.environ['KEY']" } },
  }),
}
