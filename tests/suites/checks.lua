-- Every built-in check on an output it must accept and one it must reject,
-- and checks that misbehave. tests/checks.rs asserts each case's outcome.
local evalua = require("evalua")
local check = require("evalua.check")

local suite = evalua.suite {
  name = "checks",
  trials = 1,
  sandbox = { db = "sqlite", schema = "kv.sql", clock = "2026-11-03T10:00:00Z" },
  agent = evalua.agent.scripted(function() return "" end),
}

suite:tool { name = "get", params = { type = "object", properties = { k = { type = "string" } } },
  run = function(ctx, a) return { v = ctx.db:one("SELECT v FROM kv WHERE k = ?", a.k) } end }
suite:tool { name = "noop", run = function() return {} end }
suite:tool { name = "put", effect = "write",
  params = { type = "object", properties = { k = { type = "string" }, v = {} }, required = { "k" } },
  run = function(ctx, a) ctx.db:exec("INSERT INTO kv(k, v) VALUES (?, ?)", a.k, a.v); return { ok = true } end }
suite:tool { name = "guarded_put", effect = "write", requires = { "noop" },
  params = { type = "object", properties = { k = { type = "string" } } },
  run = function(ctx, a) ctx.db:exec("INSERT INTO kv(k, v) VALUES (?, 1)", a.k); return { ok = true } end }
suite:tool { name = "write_file", effect = "write",
  params = { type = "object", properties = { path = { type = "string" }, content = { type = "string" } } },
  run = function(ctx, a) ctx.write_file(a.path, a.content); return { ok = true } end }
suite:tool { name = "email", effect = "external",
  params = { type = "object", properties = { to = { type = "string" }, body = { type = "string" } } },
  run = function(ctx, a) ctx.send("email", a.to, a.body); return { sent = true } end }

-- A case whose agent makes `calls` ({ name, args } pairs) and answers `answer`.
local function case(id, calls, answer, expect, extra)
  local spec = {
    id = id, input = id, expect = expect,
    agent = evalua.agent.scripted(function(task, env)
      for _, c in ipairs(calls) do env.call(c[1], c[2] or {}) end
      return answer
    end),
  }
  for k, v in pairs(extra or {}) do spec[k] = v end
  suite:case(spec)
end

-- sql
case("sql_equals_ok", { { "put", { k = "refund", v = 19.9 } } }, "", { check.sql("SELECT v FROM kv WHERE k = 'refund'", { equals = 19.90, tolerance = 0.005 }) })
case("sql_equals_bad", { { "put", { k = "refund", v = 59.7 } } }, "", { check.sql("SELECT v FROM kv WHERE k = 'refund'", { equals = 19.90, tolerance = 0.005 }) })
case("sql_rows_ok", { { "put", { k = "a", v = 1 } }, { "put", { k = "b", v = 2 } } }, "", { check.sql("SELECT k, v FROM kv ORDER BY k DESC", { rows = { { "a", 1 }, { "b", 2 } } }) })
case("sql_rows_ordered_bad", { { "put", { k = "a", v = 1 } }, { "put", { k = "b", v = 2 } } }, "", { check.sql("SELECT k, v FROM kv ORDER BY k DESC", { rows = { { "a", 1 }, { "b", 2 } }, ordered = true }) })
case("sql_empty_ok", {}, "", { check.sql("SELECT count(*) FROM kv", { empty = true }) })
case("sql_empty_bad", { { "put", { k = "x", v = 1 } } }, "", { check.sql("SELECT count(*) FROM kv", { empty = true }) })

-- answer
case("answer_equals_ok", {}, "  Done \n", { check.answer { equals = "Done" } })
case("answer_equals_bad", {}, "done", { check.answer { equals = "Done" } })
case("answer_normalize_ok", {}, "DONE   Now", { check.answer { equals = "done now", normalize = true } })
case("answer_contains_bad", {}, "nothing here", { check.answer { contains = "refund" } })
case("answer_matches_ok", {}, "ticket T-1234 closed", { check.answer { matches = [[T-\d{4}]] } })
case("set_ok", {}, "REC-D, REC-B and REC-C", { check.answer { set = { "REC-B", "REC-C", "REC-D" }, extract = "REC-[A-Z]" } })
case("set_duplicate", {}, "REC-B, REC-C, REC-D, REC-B", { check.answer { set = { "REC-B", "REC-C", "REC-D" }, extract = "REC-[A-Z]" } })
case("set_wrong", {}, "REC-B, REC-C", { check.answer { set = { "REC-B", "REC-C", "REC-D" }, extract = "REC-[A-Z]" } })
case("number_ok", {}, "Reembolsados 19,90 €", { check.answer { number = 19.9, tolerance = 0.001 } })
case("number_bad", {}, "Refunded 20.50", { check.answer { number = 19.9, tolerance = 0.001 } })
case("datetime_same_instant", {}, "It was at 2026-11-04T01:30:00+02:00.", { check.answer { datetime = "2026-11-03T23:30:00Z", zone = "UTC" } })
case("datetime_other_instant", {}, "It was at 2026-11-03T23:30:00+02:00.", { check.answer { datetime = "2026-11-03T23:30:00Z", zone = "UTC" } })
case("datetime_zone", {}, "2026-11-03 23:30", { check.answer { datetime = "2026-11-03T22:30:00Z", zone = "Europe/Madrid" } })

-- json_schema
local schema = { type = "object", required = { "total" }, properties = { total = { type = "integer" } } }
case("json_ok", {}, '{"total": 3}', { check.json_schema(schema) })
case("json_bad", {}, '{"total": "3"}', { check.json_schema(schema) })
case("json_not_json", {}, "total: 3", { check.json_schema(schema) })

-- tools
local extra = { { "get", { k = "a" } }, { "noop" }, { "put", { k = "a", v = 1 } } }
case("tools_in_order_extra", extra, "", { check.tools({ "get", "put" }, { mode = "in_order" }) })
case("tools_exact_extra", extra, "", { check.tools({ "get", "put" }, { mode = "exact" }) })
case("tools_min_precision", extra, "", { check.tools({ "get", "put" }, { mode = "in_order", min_precision = 0.9 }) })
case("tools_any_order_ok", { { "put", { k = "a" } }, { "get", { k = "a" } } }, "", { check.tools({ "get", "put" }, { mode = "any_order" }) })
case("tools_wrong_order", { { "put", { k = "a" } }, { "get", { k = "a" } } }, "", { check.tools({ "get", "put" }, { mode = "in_order" }) })

-- args
case("args_ok", { { "put", { k = "amount", v = 19.899 } } }, "", { check.args("put", { k = "amount", v = check.cmp.number { 19.9, tolerance = 0.01 } }) })
case("args_bad", { { "put", { k = "amount", v = 21 } } }, "", { check.args("put", { k = "amount", v = check.cmp.number { 19.9, tolerance = 0.01 } }) })
case("args_text_normalize", { { "put", { k = "  Hello   World" } } }, "", { check.args("put", { k = check.cmp.text { "hello world", normalize = true } }) })
case("args_datetime", { { "put", { k = "when", v = "2026-11-04T01:30:00+02:00" } } }, "", { check.args("put", { v = check.cmp.datetime { "2026-11-03T23:30:00Z" } }) })
case("args_no_call", {}, "", { check.args("put", { k = "x" }) })

-- before / no_loops / no_writes / max_calls / claims_only_after
case("before_ok", { { "get", { k = "a" } }, { "put", { k = "a" } } }, "", { check.before("get", "put") })
case("before_bad", { { "put", { k = "a" } }, { "get", { k = "a" } } }, "", { check.before("get", "put") })
case("loops_ok", { { "get", { k = "x" } }, { "get", { k = "x" } } }, "", { check.no_loops { max_repeats = 2 } })
case("loops_bad", { { "get", { k = "x" } }, { "get", { k = "x" } }, { "get", { k = "x" } } }, "", { check.no_loops { max_repeats = 2 } })
case("no_writes_ok", { { "get", { k = "x" } } }, "", { check.no_writes() })
case("no_writes_bad", { { "put", { k = "x" } } }, "", { check.no_writes() })
case("no_writes_denied_write", { { "guarded_put", { k = "x" } } }, "", { check.no_writes() })
case("max_calls_ok", { { "noop" }, { "noop" } }, "", { check.max_calls(2) })
case("max_calls_bad", { { "noop" }, { "noop" }, { "noop" } }, "", { check.max_calls(2) })
case("claims_ok", { { "put", { k = "r" } } }, "Refund issued.", { check.claims_only_after("(?i)refund issued", "put") })
case("claims_bad", {}, "Refund issued.", { check.claims_only_after("(?i)refund issued", "put") })
case("claims_none", {}, "I could not do it.", { check.claims_only_after("(?i)refund issued", "put") })

-- retries: `flaky` fails with a 429 until the `ok` tool has been called
suite:tool { name = "flaky", params = { type = "object", properties = { k = { type = "string" } } },
  run = function(ctx, a)
    if ctx.db:one("SELECT count(*) FROM kv WHERE k = 'unlocked'") == 0 then error("HTTP 429: rate limit exceeded", 0) end
    return { ok = true }
  end }
suite:tool { name = "broken", run = function() error("disk full", 0) end }
suite:tool { name = "unlock", effect = "write", run = function(ctx) ctx.db:exec("INSERT INTO kv(k, v) VALUES ('unlocked', 1)"); return {} end }
case("retries_ok", { { "flaky" }, { "flaky" }, { "unlock" }, { "flaky" } }, "", { check.retries { max = 2, after = "rate_limit" } })
case("retries_bad", { { "flaky" }, { "flaky" }, { "flaky" }, { "flaky" } }, "", { check.retries { max = 2, after = "rate_limit" } })
case("retries_other_error_not_a_rate_limit", { { "broken" }, { "broken" }, { "broken" } }, "", { check.retries { max = 1, after = "rate_limit" } })
case("retries_error_counts_any_failure", { { "broken" }, { "broken" }, { "broken" } }, "", { check.retries { max = 1 } })
case("retries_reset_by_success", { { "flaky" }, { "unlock" }, { "flaky" }, { "flaky" }, { "flaky" } }, "", { check.retries { max = 1, after = "rate_limit" } })
case("retries_tool_filter", { { "broken" }, { "broken" }, { "broken" } }, "", { check.retries { tool = "flaky", max = 0 } })

-- ended
case("ended_ok", {}, "done", { check.ended() })
suite:case { id = "ended_bad", input = "x", expect = { check.ended { "final" } },
  agent = evalua.agent.scripted(function() error("agent bug") end) }

-- files / outbox
case("files_ok", { { "write_file", { path = "out/report.txt", content = "total: 3" } } }, "",
  { check.files { ["out/report.txt"] = { contains = "total" }, ["missing.txt"] = { exists = false } } })
case("files_bad", {}, "", { check.files { ["out/report.txt"] = { contains = "total" } } })
case("outbox_ok", { { "email", { to = "4821", body = "19,90 €" } } }, "", { check.outbox { to = "4821", count = 1, contains = "19,90" } })
case("outbox_bad", { { "email", { to = "4821", body = "a" } }, { "email", { to = "4821", body = "b" } } }, "", { check.outbox { to = "4821", count = 1 } })

-- prohibited state is a critical failure, whatever else passed
case("prohibited_critical", { { "put", { k = "forbidden" } } }, "ok", { check.answer { equals = "ok" } },
  { prohibited = { "SELECT count(*) FROM kv WHERE k = 'forbidden'" } })
case("critical_flag", {}, "no", { check.answer { equals = "yes", critical = true, name = "must say yes" } })

-- custom checks, and checks that misbehave (grader errors, never pass or fail)
case("custom_ok", {}, "", { function(t) return #t.calls == 0, "no calls" end })
case("custom_named", {}, "", { { name = "named custom", run = function(t) return false, { why = "always" } end } })
case("custom_error", {}, "", { function(t) error("boom") end })
case("custom_nonbool", {}, "", { function(t) return "yes" end })
case("check_endless_loop", {}, "", { function(t) while true do end end })
case("check_pcall_loop", {}, "", { function(t) while true do pcall(function() while true do end end) end end })
case("check_os_execute", {}, "", { function(t) os.execute("touch /tmp/evalua-pwned") return true end })
case("check_io_open", {}, "", { function(t) io.open("/tmp/evalua-pwned", "w") return true end })
-- 64 MiB at a time, each copied from a 64 KiB piece: the 256 MiB memory limit
-- trips on the fourth step, a few hundred ms of CPU, far inside the check's
-- 10 s time limit even on a machine at load 30 (16 MiB steps, sixteen of
-- them, once took longer than 10 s of wall time there; one byte repeated
-- 64 Mi times took seconds in a debug build).
case("check_memory_hog", {}, "", { function(t) local piece, s = ("x"):rep(1 << 16), {} for i = 1, 1e9 do s[i] = piece:rep(1024) end return true end })
case("check_db_read_only", { { "put", { k = "a" } } }, "", { function(t) t.db:exec("DELETE FROM kv") return true end })
case("check_db_pragma", { { "put", { k = "a" } } }, "", { function(t) t.db:one("PRAGMA query_only = OFF") t.db:one("DELETE FROM kv") return true end })
case("initial_state", { { "put", { k = "a" } } }, "", {
  function(t) return t.initial:one("SELECT count(*) FROM kv") == 0 and t.db:one("SELECT count(*) FROM kv") == 1, "initial 0, final 1" end })
case("after_the_bad_checks", {}, "fine", { check.answer { equals = "fine" } })

return suite
