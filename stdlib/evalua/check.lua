-- evalua.check: the built-in checks.
--
-- Each constructor validates its options when the suite loads (an unknown
-- option is an error at the suite's line) and returns
-- { name, critical, run = function(t) return passed, evidence end }.
-- A check that raises is a *grader error*, never a pass or a fail.

local host = require("evalua.host")
local evalua = require("evalua")

local check = {}
check.cmp = {}

local NULL = host.null

local function opts_of(what, opts, allowed, level)
  opts = opts or {}
  if type(opts) ~= "table" then
    error(what .. ": options must be a table, got " .. type(opts), level + 1)
  end
  local known = { name = true, critical = true }
  for _, k in ipairs(allowed) do known[k] = true end
  evalua._check_keys(what, opts, known, level + 1)
  if opts.name ~= nil and type(opts.name) ~= "string" then
    error(what .. ": 'name' must be a string", level + 1)
  end
  if opts.critical ~= nil and type(opts.critical) ~= "boolean" then
    error(what .. ": 'critical' must be a boolean", level + 1)
  end
  return opts
end

-- The line of the suite (or grader module) that called a check constructor:
-- the first frame outside the stdlib (constructors often tail-call `make`).
local function user_line()
  for level = 3, 10 do
    local w = host.caller(level)
    if w == "?" then return nil end
    if not w:find("^stdlib/evalua/") and not w:find("^=") then return w end
  end
end

-- A check table. `refs` names what the host validates before any trial:
-- `tools` (tool names that must exist) and `sql` (queries prepared against the
-- case's fixture). `where` is the line that declared the check (its
-- constructor's caller).
local function make(kind, default_name, opts, run, refs)
  refs = refs or {}
  return {
    name = opts.name or default_name, critical = opts.critical or false, kind = kind, run = run,
    tools = refs.tools, sql = refs.sql, where = host.validating() and user_line() or nil,
  }
end

local finite = evalua._finite

-- A finite number (not NaN, not ±inf) in an option, at least `lo` when given.
local function number_opt(what, key, v, level, lo)
  if v == nil then return end
  if not finite(v) or (lo ~= nil and v < lo) then
    error(string.format("%s: '%s' must be a finite number%s, got %s", what, key,
      lo ~= nil and (" of at least " .. lo) or "", tostring(v)), level + 1)
  end
end

local function short(s, n)
  s = tostring(s):gsub("%s+", " ")
  n = n or 60
  if #s > n then return s:sub(1, n - 1) .. "…" end
  return s
end

local function trim(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

local function fold(s)
  return trim(s):gsub("%s+", " "):lower()
end

local function is_null(v)
  return v == nil or v == NULL
end

local function show(v)
  if is_null(v) then return "NULL" end
  if type(v) == "table" then return host.json_encode(v) end
  return tostring(v)
end

-- Deep equality for values from SQL rows, tool args and JSON.
-- Numbers compare by value within `tol` (0 by default).
local function equal(a, b, tol)
  if is_null(a) and is_null(b) then return true end
  if type(a) == "number" and type(b) == "number" then
    return math.abs(a - b) <= (tol or 0)
  end
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do
    if not equal(v, b[k], tol) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end
check._equal = equal

----------------------------------------------------------------------------
-- Final state

--- SQL on the final database: `equals` (first column of the first row),
--- `rows` (a multiset unless `ordered`), or `empty`.
function check.sql(q, opts)
  if type(q) ~= "string" then error("check.sql: the query must be a string", 2) end
  opts = opts_of("check.sql", opts, { "equals", "tolerance", "rows", "ordered", "empty" }, 2)
  local modes = (opts.equals ~= nil and 1 or 0) + (opts.rows ~= nil and 1 or 0) + (opts.empty ~= nil and 1 or 0)
  if modes ~= 1 then
    error("check.sql: give exactly one of 'equals', 'rows' or 'empty'", 2)
  end
  if opts.tolerance ~= nil and type(opts.tolerance) ~= "number" then
    error("check.sql: 'tolerance' must be a number", 2)
  end
  number_opt("check.sql", "tolerance", opts.tolerance, 2, 0)
  if type(opts.equals) == "number" then number_opt("check.sql", "equals", opts.equals, 2) end
  if opts.rows ~= nil and type(opts.rows) ~= "table" then
    error("check.sql: 'rows' must be a list of rows", 2)
  end
  local tol = opts.tolerance or 0
  return make("sql", "sql: " .. short(q), opts, function(t)
    local rows = t.db:rows(q)
    if opts.empty ~= nil then
      local empty = #rows == 0 or (#rows == 1 and #rows[1] <= 1 and (is_null(rows[1][1]) or rows[1][1] == 0))
      local want = opts.empty ~= false
      return empty == want, { query = q, rows = rows, empty = empty }
    elseif opts.equals ~= nil then
      local got = rows[1] and rows[1][1]
      if rows[1] == nil then got = NULL end
      return equal(got, opts.equals, tol), { query = q, expected = opts.equals, got = got, tolerance = tol }
    else
      local want = opts.rows
      if #rows ~= #want then
        return false, { query = q, expected = want, got = rows, reason = string.format("%d rows, expected %d", #rows, #want) }
      end
      if opts.ordered then
        for i = 1, #want do
          if not equal(rows[i], want[i], tol) then
            return false, { query = q, expected = want, got = rows, reason = "row " .. i .. " differs" }
          end
        end
        return true, { query = q, rows = rows }
      end
      local used = {}
      for _, w in ipairs(want) do
        local found = false
        for j, r in ipairs(rows) do
          if not used[j] and equal(r, w, tol) then used[j] = true; found = true; break end
        end
        if not found then
          return false, { query = q, expected = want, got = rows, reason = "missing row " .. show(w) }
        end
      end
      return true, { query = q, rows = rows }
    end
  end, { sql = { q } })
end

--- The work dir after the trial: { [path] = { exists = bool, contains = s, matches = re } }.
function check.files(spec, opts)
  if type(spec) ~= "table" then error("check.files: expects a table of path = expectations", 2) end
  for path, want in pairs(spec) do
    if type(path) ~= "string" or type(want) ~= "table" then
      error("check.files: each entry is [path] = { exists = ..., contains = ... }", 2)
    end
    evalua._check_keys("check.files['" .. path .. "']", want, { exists = true, contains = true, matches = true }, 2)
  end
  opts = opts_of("check.files", opts, {}, 2)
  return make("files", "files", opts, function(t)
    local problems = {}
    local paths = {}
    for path in pairs(spec) do paths[#paths + 1] = path end
    table.sort(paths)
    for _, path in ipairs(paths) do
      local want = spec[path]
      local content = t.files[path]
      local exists = content ~= nil
      local want_exists = want.exists
      if want_exists == nil then want_exists = (want.contains ~= nil or want.matches ~= nil) or nil end
      if want_exists ~= nil and exists ~= want_exists then
        problems[#problems + 1] = path .. (exists and " exists" or " is missing")
      elseif exists and want.contains and not content:find(want.contains, 1, true) then
        problems[#problems + 1] = path .. " does not contain " .. short(want.contains)
      elseif exists and want.matches and not host.regex_is_match(want.matches, content) then
        problems[#problems + 1] = path .. " does not match /" .. want.matches .. "/"
      end
    end
    if #problems > 0 then return false, table.concat(problems, "; ") end
    return true, #paths .. " path(s) as expected"
  end)
end

--- What the agent sent: { count = n, to = s, contains = s, kind = s }.
--- `to`, `contains` and `kind` filter the messages; `count` (default: at least one) is checked on what remains.
function check.outbox(opts)
  opts = opts_of("check.outbox", opts, { "count", "to", "contains", "kind" }, 2)
  if opts.count ~= nil and math.type(opts.count) ~= "integer" then
    error("check.outbox: 'count' must be an integer", 2)
  end
  local label = "outbox"
  if opts.to then label = label .. " to " .. tostring(opts.to) end
  return make("outbox", label, opts, function(t)
    local matching = {}
    for _, m in ipairs(t.outbox) do
      local ok = true
      if opts.to ~= nil and tostring(m.to) ~= tostring(opts.to) then ok = false end
      if opts.kind ~= nil and m.kind ~= opts.kind then ok = false end
      if opts.contains ~= nil and not tostring(m.body):find(opts.contains, 1, true) then ok = false end
      if ok then matching[#matching + 1] = m end
    end
    local ev = { matching = #matching, total = #t.outbox }
    if opts.count ~= nil then
      ev.expected = opts.count
      return #matching == opts.count, ev
    end
    return #matching > 0, ev
  end)
end

----------------------------------------------------------------------------
-- The final answer

local function first_number(s)
  -- Accept "19.90", "19,90", "-3", "1e3"; a comma is a decimal mark when it is followed by 1-2 digits.
  local m = host.regex_find([[[-+]?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?]], s)
  if not m then return nil end
  return tonumber((m:gsub(",", ".")))
end
check._first_number = first_number

local DATETIME_RE = [[\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?]]

--- Checks on the agent's final answer (trimmed). One of: equals, contains,
--- matches, set (+ extract), number (+ tolerance), datetime (+ zone).
function check.answer(opts)
  opts = opts_of("check.answer", opts,
    { "equals", "contains", "matches", "normalize", "set", "extract", "number", "tolerance", "datetime", "zone" }, 2)
  local modes = 0
  for _, k in ipairs({ "equals", "contains", "matches", "set", "number", "datetime" }) do
    if opts[k] ~= nil then modes = modes + 1 end
  end
  if modes ~= 1 then
    error("check.answer: give exactly one of equals, contains, matches, set, number, datetime", 2)
  end
  if opts.matches then
    local err = host.regex_error(opts.matches)
    if err then error("check.answer: 'matches' is not a valid regex: " .. err, 2) end
  end
  if opts.set ~= nil then
    if type(opts.set) ~= "table" then error("check.answer: 'set' must be a list", 2) end
    if type(opts.extract) ~= "string" then
      error("check.answer: 'set' needs 'extract', a regex whose matches are the items", 2)
    end
    local err = host.regex_error(opts.extract)
    if err then error("check.answer: 'extract' is not a valid regex: " .. err, 2) end
  elseif opts.extract ~= nil then
    error("check.answer: 'extract' only goes with 'set'", 2)
  end
  if opts.tolerance ~= nil and opts.number == nil then
    error("check.answer: 'tolerance' only goes with 'number'", 2)
  end
  if opts.number ~= nil then
    if type(opts.number) ~= "number" then error("check.answer: 'number' must be a number", 2) end
    number_opt("check.answer", "number", opts.number, 2)
  end
  number_opt("check.answer", "tolerance", opts.tolerance, 2, 0)
  if opts.zone ~= nil and opts.datetime == nil then
    error("check.answer: 'zone' only goes with 'datetime'", 2)
  end
  local want_instant
  if opts.datetime ~= nil then
    local v, err = host.instant(opts.datetime, opts.zone or "UTC")
    if not v then error("check.answer: 'datetime': " .. err, 2) end
    want_instant = v
  end

  local function prep(s)
    s = trim(s or "")
    if opts.normalize then s = fold(s) end
    return s
  end

  local label
  if opts.equals then label = "answer equals " .. short(opts.equals, 40)
  elseif opts.contains then label = "answer contains " .. short(opts.contains, 40)
  elseif opts.matches then label = "answer matches /" .. short(opts.matches, 40) .. "/"
  elseif opts.number then label = "answer number " .. tostring(opts.number)
  elseif opts.datetime then label = "answer datetime " .. opts.datetime end

  if opts.set ~= nil then
    -- Two verdicts, so a duplicate is never hidden by set equality (and never
    -- masks a wrong set): the set as a set, and apart, no item repeated.
    local function items(t)
      local counts, got, dups = {}, {}, {}
      for _, it in ipairs(host.regex_all(opts.extract, prep(t.answer))) do
        if opts.normalize then it = fold(it) end
        counts[it] = (counts[it] or 0) + 1
        if counts[it] == 1 then got[#got + 1] = it elseif counts[it] == 2 then dups[#dups + 1] = it end
      end
      table.sort(dups)
      return got, counts, dups
    end
    local want, want_set = {}, {}
    for _, it in ipairs(opts.set) do
      it = tostring(it)
      if opts.normalize then it = fold(it) end
      if not want_set[it] then want_set[it] = true; want[#want + 1] = it end
    end
    local set_check = make("answer", opts.name or "answer set", opts, function(t)
      local got, counts = items(t)
      local missing, extra = {}, {}
      for _, it in ipairs(want) do if not counts[it] then missing[#missing + 1] = it end end
      for _, it in ipairs(got) do if not want_set[it] then extra[#extra + 1] = it end end
      table.sort(missing); table.sort(extra)
      local ok = #missing == 0 and #extra == 0
      return ok, { expected = want, got = got, missing = missing, extra = extra }
    end)
    local dup_check = make("answer", (opts.name or "answer set") .. ": duplicate", opts, function(t)
      local _, _, dups = items(t)
      return #dups == 0, { duplicates = dups }
    end)
    return { set_check, dup_check }
  end

  return make("answer", label, opts, function(t)
    local a = prep(t.answer)
    if opts.equals ~= nil then
      return a == prep(opts.equals), { expected = opts.equals, got = a }
    elseif opts.contains ~= nil then
      local needle = prep(opts.contains)
      return a:find(needle, 1, true) ~= nil, { expected = opts.contains, got = a }
    elseif opts.matches ~= nil then
      return host.regex_is_match(opts.matches, a), { pattern = opts.matches, got = a }
    elseif opts.number ~= nil then
      local n = first_number(a)
      if n == nil then return false, { expected = opts.number, got = NULL, reason = "no number in the answer" } end
      local tol = opts.tolerance or 0
      return math.abs(n - opts.number) <= tol, { expected = opts.number, got = n, tolerance = tol }
    else
      local s = host.regex_find(DATETIME_RE, a)
      if not s then return false, { expected = opts.datetime, reason = "no date or datetime in the answer" } end
      local got, err = host.instant(s, opts.zone or "UTC")
      if not got then return false, { expected = opts.datetime, got = s, reason = err } end
      return got == want_instant, { expected = opts.datetime, got = s, zone = opts.zone or "UTC" }
    end
  end)
end

--- The answer parses as JSON and validates against `schema`.
function check.json_schema(schema, opts)
  if type(schema) ~= "table" then error("check.json_schema: expects a JSON schema table", 2) end
  local err = host.schema_error(schema)
  if err then error("check.json_schema: not a valid JSON schema: " .. err, 2) end
  opts = opts_of("check.json_schema", opts, {}, 2)
  return make("json_schema", "answer json_schema", opts, function(t)
    local value, perr = host.json_decode(trim(t.answer or ""))
    if perr then return false, { reason = "not JSON: " .. perr } end
    local ok, errors = host.schema_validate(schema, value)
    return ok, ok and "valid" or { errors = errors }
  end)
end

----------------------------------------------------------------------------
-- The trajectory

local function executed(t, name)
  local out = {}
  for _, c in ipairs(t.calls) do
    if c.status == "executed" and (name == nil or c.name == name) then out[#out + 1] = c end
  end
  return out
end
check._executed = executed

local function names_of(calls)
  local out = {}
  for i, c in ipairs(calls) do out[i] = c.name end
  return evalua.array(out)
end

-- Whether a call's result says it went wrong although its handler returned:
-- an `error` that is not null (or false), `is_error = true`, `ok = false` or
-- `success = false` (how many tools, and
-- recorded traces, report a failure they did not raise).
local function result_says_error(c)
  local r = c.result
  if type(r) ~= "table" then return false end
  local e = r.error
  if e ~= nil and e ~= evalua.null and e ~= false then return true end
  return r.is_error == true or r.ok == false or r.success == false
end

-- Which calls a trajectory check counts (`calls = ...`):
--   "executed" (the default): calls whose handler ran (status executed);
--   "requested": every call the agent asked for, whatever became of it;
--   "succeeded": executed calls whose result does not report an error.
local CALL_KINDS = {
  executed = function(c) return c.status == "executed" end,
  requested = function() return true end,
  succeeded = function(c) return c.status == "executed" and not result_says_error(c) end,
}

local function calls_opt(what, v, level)
  if v == nil then return "executed" end
  if CALL_KINDS[v] == nil then
    error(what .. ": 'calls' must be \"executed\" (the default), \"requested\" or \"succeeded\", got " .. tostring(v), level + 1)
  end
  return v
end

local function counted(t, kind, name)
  local keep, out = CALL_KINDS[kind], {}
  for _, c in ipairs(t.calls) do
    if keep(c) and (name == nil or c.name == name) then out[#out + 1] = c end
  end
  return out
end

-- A ratio as evidence shows it: four decimals, not 0.3333333333333333.
local function ratio(x)
  return math.floor(x * 10000 + 0.5) / 10000
end

-- Length of the longest common subsequence of two lists of names.
local function lcs(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = 0 end
  for i = 1, #a do
    local cur = { [0] = 0 }
    for j = 1, #b do
      if a[i] == b[j] then cur[j] = prev[j - 1] + 1 else cur[j] = math.max(prev[j], cur[j - 1]) end
    end
    prev = cur
  end
  return prev[#b]
end

--- Executed calls against an expected list of tool names.
--- mode "exact": the same sequence; "in_order": the list is a subsequence
--- (extra calls allowed); "any_order": each expected call appears (multiset).
--- Recall = expected calls matched / expected; precision = matched / counted.
--- `calls` says which calls count: "executed" (the default), "requested"
--- (every call, whatever its status) or "succeeded" (executed, and the
--- result reports no error).
function check.tools(list, opts)
  if type(list) ~= "table" then error("check.tools: expects a list of tool names", 2) end
  for i, n in ipairs(list) do
    if type(n) ~= "string" then error("check.tools: item " .. i .. " must be a tool name", 2) end
  end
  opts = opts_of("check.tools", opts, { "mode", "min_recall", "min_precision", "calls" }, 2)
  local kind = calls_opt("check.tools", opts.calls, 2)
  local mode = opts.mode or "in_order"
  if mode ~= "exact" and mode ~= "in_order" and mode ~= "any_order" then
    error("check.tools: 'mode' must be \"exact\", \"in_order\" or \"any_order\", got " .. tostring(mode), 2)
  end
  number_opt("check.tools", "min_recall", opts.min_recall, 2, 0)
  number_opt("check.tools", "min_precision", opts.min_precision, 2, 0)
  local min_recall = opts.min_recall or 1
  local min_precision = opts.min_precision or 0
  return make("tools", "tools " .. mode .. ": " .. table.concat(list, ", "), opts, function(t)
    local got = names_of(counted(t, kind))
    local matched
    if mode == "any_order" then
      local pool = {}
      for _, n in ipairs(got) do pool[n] = (pool[n] or 0) + 1 end
      matched = 0
      for _, n in ipairs(list) do
        if (pool[n] or 0) > 0 then pool[n] = pool[n] - 1; matched = matched + 1 end
      end
    else
      matched = lcs(list, got)
    end
    local recall = #list == 0 and 1 or matched / #list
    local precision = #got == 0 and (#list == 0 and 1 or 0) or matched / #got
    -- A copy: marking `list` itself as an array would change the case after
    -- its first trial, and a worker evaluates the whole suite again for the
    -- next trial whenever a trial changed its case.
    local expected = {}
    for i, n in ipairs(list) do expected[i] = n end
    local ev = { mode = mode, expected = evalua.array(expected), [kind] = got, recall = ratio(recall),
      precision = ratio(precision) }
    if mode == "exact" then
      local same = #got == #list
      for i = 1, #list do if got[i] ~= list[i] then same = false end end
      return same, ev
    end
    return recall >= min_recall and precision >= min_precision, ev
  end, { tools = list })
end

--- A comparator: a function(actual) -> ok, or a table from check.cmp.*.
local function compare(want, got)
  if type(want) == "table" and want._cmp then return want._cmp(got) end
  if type(want) == "function" then return want(got) == true end
  return equal(got, want)
end

local function comparator(what, spec, allowed, fn)
  if type(spec) ~= "table" or spec[1] == nil then
    error(what .. " expects { expected_value, ... }", 3)
  end
  local known = { [1] = true }
  for _, k in ipairs(allowed) do known[k] = true end
  for k in pairs(spec) do
    if not known[k] then error(what .. ": unknown option '" .. tostring(k) .. "'", 3) end
  end
  return { _cmp = fn, expected = spec[1] }
end

--- Numbers within `tolerance`.
function check.cmp.number(spec)
  if type(spec) == "table" then
    number_opt("check.cmp.number", "tolerance", spec.tolerance, 2, 0)
    if type(spec[1]) == "number" then number_opt("check.cmp.number", "expected value", spec[1], 2) end
  end
  local c = comparator("check.cmp.number", spec, { "tolerance" }, function(got)
    return type(got) == "number" and math.abs(got - spec[1]) <= (spec.tolerance or 0)
  end)
  if type(spec[1]) ~= "number" then error("check.cmp.number: the expected value must be a number", 2) end
  return c
end

--- Datetimes compared as instants; values without an offset are read in `zone`.
function check.cmp.datetime(spec)
  local zone = type(spec) == "table" and spec.zone or "UTC"
  local want, err = host.instant(type(spec) == "table" and tostring(spec[1]) or "", zone)
  if not want then error("check.cmp.datetime: " .. tostring(err), 2) end
  return comparator("check.cmp.datetime", spec, { "zone" }, function(got)
    if type(got) ~= "string" then return false end
    local v = host.instant(got, zone)
    return v ~= nil and v == want
  end)
end

--- Text, optionally folding case and whitespace.
function check.cmp.text(spec)
  return comparator("check.cmp.text", spec, { "normalize" }, function(got)
    if type(got) ~= "string" then return false end
    if spec.normalize then return fold(got) == fold(tostring(spec[1])) end
    return got == tostring(spec[1])
  end)
end

--- Every executed call of `tool` has matching arguments (at least one must exist).
function check.args(tool, fields, opts)
  if type(tool) ~= "string" then error("check.args: the first argument is a tool name", 2) end
  if type(fields) ~= "table" then error("check.args: the second argument is a table of field = value | comparator", 2) end
  opts = opts_of("check.args", opts, {}, 2)
  return make("args", "args " .. tool, opts, function(t)
    local calls = executed(t, tool)
    if #calls == 0 then return false, { reason = "no executed call of " .. tool } end
    for i, c in ipairs(calls) do
      for field, want in pairs(fields) do
        local got = c.args[field]
        if not compare(want, got) then
          local expected = type(want) == "table" and want._cmp and want.expected or want
          if type(want) == "function" then expected = "<function>" end
          return false, { call = i, field = field, expected = expected, got = got == nil and NULL or got }
        end
      end
    end
    return true, { calls = #calls }
  end, { tools = { tool } })
end

--- Every executed `b` comes after an `a`: by default an executed `a`;
--- `calls = "succeeded"` requires an `a` whose result reports no error (a
--- failed identity check is not "before"), `calls = "requested"` takes any
--- requested `a` (and counts every requested `b`).
function check.before(a, b, opts)
  if type(a) ~= "string" or type(b) ~= "string" then error("check.before: expects two tool names", 2) end
  opts = opts_of("check.before", opts, { "calls" }, 2)
  local kind = calls_opt("check.before", opts.calls, 2)
  local first_ok = CALL_KINDS[kind]
  -- The `b` calls that need an `a` first: executed ones, or with "requested" every one.
  local b_counts = kind == "requested" and CALL_KINDS.requested or CALL_KINDS.executed
  local what = kind == "executed" and "executed" or (kind == "succeeded" and "successful" or "requested")
  return make("before", a .. " before " .. b, opts, function(t)
    local seen_a, tried_a = false, nil
    for i, c in ipairs(t.calls) do
      if c.name == a then
        if first_ok(c) then seen_a = true elseif tried_a == nil then tried_a = i end
      end
      if c.name == b and b_counts(c) and not seen_a then
        local ev = { reason = string.format("%s %s (call %d) before any %s %s", b,
          kind == "requested" and "requested" or "executed", i, what, a) }
        if tried_a then ev.unsuccessful_call = tried_a end
        return false, ev
      end
    end
    return true, "ok"
  end, { tools = { a, b } })
end

--- No (tool, args) pair is requested more than `max_repeats` times.
function check.no_loops(opts)
  opts = opts_of("check.no_loops", opts, { "max_repeats" }, 2)
  local max = opts.max_repeats or 2
  if math.type(max) ~= "integer" or max < 1 then error("check.no_loops: 'max_repeats' must be a positive integer", 2) end
  return make("no_loops", "no_loops (max " .. max .. ")", opts, function(t)
    local counts = {}
    for _, c in ipairs(t.calls) do
      local key = c.name .. " " .. host.json_encode(c.args)
      counts[key] = (counts[key] or 0) + 1
      if counts[key] > max then
        return false, { repeated = key, times = counts[key], max_repeats = max }
      end
    end
    return true, "ok"
  end)
end

-- Whether a call that did not succeed was turned down by a rate limit: a
-- `faulted` rate limit, or an error (or error type) that says 429 / rate limit.
local function rate_limited(c)
  if type(c.fault) == "table" and c.fault.kind == "rate_limit" then return true end
  for _, text in ipairs { c.error, c.error_type } do
    if type(text) == "string" then
      local low = text:lower()
      if low:find("429", 1, true) or low:find("rate[ _%-]?limit") or low:find("too many requests", 1, true) then
        return true
      end
    end
  end
  return false
end

-- Whether the agent was told call `c` succeeded: executed, or faulted by a
-- kind that only reshaped what the handler returned (empty, partial, stale,
-- inject).
local function answered_ok(c)
  return c.status == "executed"
    or (c.status == "faulted" and c.error == nil and type(c.fault) == "table" and c.fault.handler_ran == true)
end

-- Whether call `c` is a failure of the kind `after` names.
local function failure_of(c, after)
  if answered_ok(c) then return false end
  if after == "any" then return true end
  if c.status ~= "failed" and c.status ~= "faulted" then return false end
  if after == "rate_limit" then return rate_limited(c) end
  return true -- "error": any failed or faulted call
end
check._rate_limited = rate_limited

--- No tool is called again more than `max` times after a failed or faulted
--- call of the kind `after` names ("rate_limit": a faulted rate limit or an
--- error saying 429 / rate limit; "error" (default): any failed or faulted
--- call; "any": any call that did not execute). A call faulted by a kind
--- that only reshapes the result (`empty`, `partial`, `stale`, `inject`)
--- reached the agent as a success and counts as one; a `timeout` whose
--- effect was applied is a failure: the agent could not know the effect
--- happened. The count restarts when a call of that tool succeeds. `tool`
--- limits the check to one tool.
function check.retries(opts)
  opts = opts_of("check.retries", opts, { "tool", "max", "after" }, 2)
  local max, after = opts.max or 1, opts.after or "error"
  if math.type(max) ~= "integer" or max < 0 then error("check.retries: 'max' must be a non-negative integer", 2) end
  if after ~= "rate_limit" and after ~= "error" and after ~= "any" then
    error("check.retries: 'after' must be \"rate_limit\", \"error\" or \"any\", got " .. tostring(after), 2)
  end
  if opts.tool ~= nil and type(opts.tool) ~= "string" then error("check.retries: 'tool' must be a tool name", 2) end
  local name = "retries (" .. (opts.tool and (opts.tool .. ", ") or "") .. "max " .. max .. " after " .. after .. ")"
  return make("retries", name, opts, function(t)
    -- Per tool: the index of the failure that opened the streak, and the retries since.
    local open = {}
    for i, c in ipairs(t.calls) do
      if opts.tool == nil or c.name == opts.tool then
        local streak = open[c.name]
        if streak then
          streak.retries = streak.retries + 1
          if streak.retries > max then
            return false, { tool = c.name, retries = streak.retries, max = max, after = after,
                            first_failure = streak.at, call = i }
          end
        end
        if answered_ok(c) then
          open[c.name] = nil
        elseif failure_of(c, after) and not streak then
          open[c.name] = { at = i, retries = 0 }
        end
      end
    end
    return true, "ok"
  end, { tools = opts.tool and { opts.tool } or nil })
end

--- No write/external tool ran (executed, or faulted after its handler ran,
--- as a `timeout` with its effect applied) and the database equals the
--- initial one.
function check.no_writes(opts)
  opts = opts_of("check.no_writes", opts, {}, 2)
  return make("no_writes", "no_writes", opts, function(t)
    for i, c in ipairs(t.calls) do
      local ran = c.status == "executed" or (c.status == "faulted" and type(c.fault) == "table" and c.fault.handler_ran == true)
      if ran and c.effect ~= "read" then
        return false, { reason = string.format("call %d (%s) has effect %s", i, c.name, c.effect) }
      end
    end
    if t.db:digest() ~= t.initial:digest() then
      return false, { reason = "the database differs from its initial state" }
    end
    return true, "no writes"
  end)
end

--- The final database equals the state that `calls` (a list of `{ name,
--- args }`, a case's gold calls) leave on a fresh copy of the case's fixture,
--- every table compared whole (SPEC §14; τ-bench's `r_actions`). `ignore`
--- lists "table" or "table.column" to leave out. Evidence: the tables that
--- differ, and how (`t.db:diff(gold)`).
function check.same_state(calls, opts)
  if type(calls) ~= "table" then error("check.same_state: expects a list of calls { name = …, args = … }", 2) end
  local names = {}
  for i, c in ipairs(calls) do
    if type(c) ~= "table" or type(c.name) ~= "string" then
      error("check.same_state: call " .. i .. " must be { name = \"tool\", args = { … } }", 2)
    end
    if c.args ~= nil and type(c.args) ~= "table" then
      error("check.same_state: call " .. i .. " (" .. c.name .. "): args must be a table", 2)
    end
    names[#names + 1] = c.name
  end
  opts = opts_of("check.same_state", opts, { "ignore" }, 2)
  local ignore = opts.ignore or {}
  if type(ignore) ~= "table" then error("check.same_state: 'ignore' must be a list of \"table\" or \"table.column\"", 2) end
  return make("same_state", "same state as the gold calls", opts, function(t)
    -- The gold state's digest is computed once per fixture and calls (t:replay_digest);
    -- the gold state itself is built only to say how a different one differs.
    if #ignore == 0 and t.db:digest() == t:replay_digest(calls) then return true, "same state" end
    local diff = t.db:diff(t:replay(calls), ignore)
    if #diff == 0 then return true, "same state" end
    return false, { reason = "the final database differs from the gold calls' state (here = final, there = gold)", tables = diff }
  end, { tools = names })
end

local ENDINGS = { final = true, abstained = true, deadline = true, budget = true, crashed = true, protocol_error = true,
  infra_error = true }

--- The agent's run ended one of these ways (default: { "final" }). A crash
--- or protocol error fails a trial without it (unless the case sets
--- `accept_abnormal_end`); this check also holds `deadline` and `budget` to account.
function check.ended(list, opts)
  list = list or { "final" }
  if type(list) ~= "table" or #list == 0 then error("check.ended: expects a list such as { \"final\" }", 2) end
  local allowed = {}
  for i, e in ipairs(list) do
    if not ENDINGS[e] then
      error("check.ended: item " .. i .. " must be final, abstained, deadline, budget, crashed, protocol_error or infra_error, got " .. tostring(e), 2)
    end
    allowed[e] = true
  end
  opts = opts_of("check.ended", opts, {}, 2)
  return make("ended", "ended " .. table.concat(list, "|"), opts, function(t)
    return allowed[t.ended] == true, { ended = t.ended, error = t.error }
  end)
end

--- The agent abstained (SPEC §22): it declined the task with a reason
--- instead of answering. The default expectation of a `should_abstain` case.
function check.abstained(opts)
  opts = opts_of("check.abstained", opts, {}, 2)
  return make("abstained", "abstained", opts, function(t)
    return t.ended == "abstained", { ended = t.ended, reason = t.ended == "abstained" and t.answer or nil }
  end)
end

--- At most `n` tool calls were requested.
function check.max_calls(n, opts)
  if math.type(n) ~= "integer" or n < 0 then error("check.max_calls: expects a non-negative integer", 2) end
  opts = opts_of("check.max_calls", opts, {}, 2)
  return make("max_calls", "max_calls " .. n, opts, function(t)
    return #t.calls <= n, { requested = #t.calls, max = n }
  end)
end

local EFFICIENCY_MEASURES = { calls = true, executed_calls = true, tokens = true }

--- The trial took at most `max_ratio` times what the case's reference
--- solution takes (`reference = { calls = N, tokens = M }` on the case): its
--- tool calls requested and, when the reference gives tokens, its tokens.
--- `measure` limits it to one of "calls", "executed_calls" or "tokens".
--- `max_ratio` defaults to the reference's own (2 unless it sets one).
--- Skipped (never passed) when the case declares no reference.
function check.efficiency(opts)
  opts = opts_of("check.efficiency", opts, { "max_ratio", "measure" }, 2)
  if opts.max_ratio ~= nil and not (finite(opts.max_ratio) and opts.max_ratio > 0) then
    error("check.efficiency: 'max_ratio' must be a positive number, got " .. tostring(opts.max_ratio), 2)
  end
  if opts.measure ~= nil and not EFFICIENCY_MEASURES[opts.measure] then
    error("check.efficiency: 'measure' must be \"calls\", \"executed_calls\" or \"tokens\", got " .. tostring(opts.measure), 2)
  end
  local name = "efficiency"
  if opts.measure then name = name .. " " .. opts.measure end
  if opts.max_ratio then name = name .. " (max " .. opts.max_ratio .. "x)" end
  return make("efficiency", name, opts, function(t)
    local ref = t.case and t.case.reference
    if type(ref) ~= "table" then
      return evalua.SKIP, "the case declares no reference solution (reference = { calls = ..., tokens = ... })"
    end
    local max = opts.max_ratio or ref.max_ratio   -- the reference's own, defaulted by the host
    local executed = 0
    for _, c in ipairs(t.calls) do
      if c.status == "executed" then executed = executed + 1 end
    end
    local usage = t.usage or {}
    local tokens = (usage.input_tokens or 0) + (usage.output_tokens or 0)
    local ev = { max_ratio = max }
    local ok, measured = true, 0
    local function measure(key, value, base)
      if base == nil or (opts.measure ~= nil and opts.measure ~= key) then return end
      local ratio = value / base
      ev[key] = value
      ev["reference_" .. (key == "tokens" and "tokens" or "calls")] = base
      ev[key .. "_ratio"] = ratio
      measured = measured + 1
      if ratio > max then
        ok = false
        ev.over = ev.over or {}
        ev.over[#ev.over + 1] = key
      end
    end
    measure("calls", #t.calls, ref.calls)
    if opts.measure == "executed_calls" then measure("executed_calls", executed, ref.calls) end
    measure("tokens", tokens, ref.tokens)
    if measured == 0 then
      return evalua.SKIP, "the case's reference gives no " .. (opts.measure == "tokens" and "tokens" or "calls")
    end
    return ok, ev
  end)
end

--- If the answer matches `pattern` (a claim of success), `tool` was executed first.
function check.claims_only_after(pattern, tool, opts)
  if type(pattern) ~= "string" or type(tool) ~= "string" then
    error("check.claims_only_after: expects (pattern, tool)", 2)
  end
  local err = host.regex_error(pattern)
  if err then error("check.claims_only_after: not a valid regex: " .. err, 2) end
  opts = opts_of("check.claims_only_after", opts, {}, 2)
  return make("claims_only_after", "claims only after " .. tool, opts, function(t)
    if not host.regex_is_match(pattern, t.answer or "") then
      return true, "no claim"
    end
    if #executed(t, tool) > 0 then return true, "claim backed by " .. tool end
    return false, { reason = "the answer claims success but " .. tool .. " never executed", pattern = pattern }
  end, { tools = { tool } })
end

----------------------------------------------------------------------------
-- Coding agents: the work tree after the trial

local function string_list(what, key, v, level, required)
  if v == nil and not required then return end
  if type(v) ~= "table" then error(string.format("%s: '%s' must be a list of strings", what, key), level + 1) end
  for i, s in ipairs(v) do
    if type(s) ~= "string" then
      error(string.format("%s: '%s'[%d] must be a string, got %s", what, key, i, type(s)), level + 1)
    end
  end
  if required and #v == 0 then error(string.format("%s: '%s' must not be empty", what, key), level + 1) end
end

local function command_of(what, cmd, level)
  if type(cmd) == "string" then
    if cmd == "" then error(what .. ": 'cmd' is empty", level + 1) end
    return cmd, cmd
  end
  if type(cmd) ~= "table" then
    error(what .. ": 'cmd' is required: a list like { \"python3\", \"-m\", \"unittest\" } or a shell string", level + 1)
  end
  string_list(what, "cmd", cmd, level + 1, true)
  return cmd, table.concat(cmd, " ")
end

local function inject_of(what, inject, level)
  if inject == nil then return nil end
  if type(inject) ~= "string" then error(what .. ": 'inject' must be a folder path (relative to the suite)", level + 1) end
  local p = host.abspath(inject)
  if not host.exists(p) then error(what .. ": 'inject' folder not found: " .. p, level + 1) end
  return p
end

local function positive(what, key, v, level)
  if v ~= nil and (not finite(v) or v <= 0) then
    error(string.format("%s: '%s' must be a positive number", what, key), level + 1)
  end
end

--- Run a command in a fresh copy of the final work dir (plus `inject`ed files):
--- passes when it exits with `expect_exit` (default 0) within `timeout_s` (default 60).
--- A command that cannot start is a grader error, not a fail.
function check.command(opts)
  opts = opts_of("check.command", opts, { "cmd", "timeout_s", "expect_exit", "inject", "max_output" }, 2)
  local cmd, label = command_of("check.command", opts.cmd, 2)
  positive("check.command", "timeout_s", opts.timeout_s, 2)
  positive("check.command", "max_output", opts.max_output, 2)
  if opts.expect_exit ~= nil and math.type(opts.expect_exit) ~= "integer" then
    error("check.command: 'expect_exit' must be an integer", 2)
  end
  local inject = inject_of("check.command", opts.inject, 2)
  local expect = opts.expect_exit or 0
  local timeout = opts.timeout_s or host.default("tests.timeout_s")
  return make("command", "command: " .. short(label), opts, function(t)
    local r, err = t.run_command { cmd = cmd, timeout_s = timeout, inject = inject, max_output = opts.max_output }
    if not r then error("check.command: " .. err, 0) end
    local ev = {
      cmd = cmd, expect_exit = expect, exit_code = r.exit_code, signal = r.signal, timed_out = r.timed_out,
      output_limited = r.output_limited, duration_ms = r.duration_ms,
      stdout_tail = r.stdout, stderr_tail = r.stderr, stdout_bytes = r.stdout_bytes, stderr_bytes = r.stderr_bytes,
    }
    if r.timed_out then ev.reason = "timed out after " .. timeout .. " s" end
    if r.output_limited then ev.reason = "output limit exceeded" end
    return not r.timed_out and not r.output_limited and r.exit_code == expect, ev
  end)
end

--- SWE-bench style tests: `inject` (hidden test files, copied in only at grading time) over a copy of the
--- final tree, then `runner ++ { id }` per test id; every FAIL_TO_PASS and PASS_TO_PASS id must exit 0.
function check.tests(opts)
  opts = opts_of("check.tests", opts, host.fields("tests"), 2)   -- spec::TestsSpec
  string_list("check.tests", "runner", opts.runner, 2, true)
  string_list("check.tests", "fail_to_pass", opts.fail_to_pass, 2)
  string_list("check.tests", "pass_to_pass", opts.pass_to_pass, 2)
  positive("check.tests", "timeout_s", opts.timeout_s, 2)
  local f2p, p2p = opts.fail_to_pass or {}, opts.pass_to_pass or {}
  if #f2p + #p2p == 0 then error("check.tests: list at least one test in 'fail_to_pass' or 'pass_to_pass'", 2) end
  local inject = inject_of("check.tests", opts.inject, 2)
  local timeout = opts.timeout_s or host.default("tests.timeout_s")
  local ids = {}
  for _, id in ipairs(f2p) do ids[#ids + 1] = id end
  for _, id in ipairs(p2p) do ids[#ids + 1] = id end
  local c = make("tests", "tests", opts, function(t)
    local runs, err = t.run_tests { runner = opts.runner, tests = ids, inject = inject, timeout_s = timeout }
    if not runs then error("check.tests: " .. err, 0) end
    local by = {}
    for _, r in ipairs(runs) do by[r.id] = r end
    local ev = { fail_to_pass = {}, pass_to_pass = {}, tests = evalua.array(), failed = evalua.array() }
    local function note(group, key, id)
      local r = by[id]
      ev[key][id] = r.passed and "passed" or "failed"
      ev.tests[#ev.tests + 1] = { id = id, group = group, passed = r.passed, status = r.status, duration_ms = r.duration_ms }
      if not r.passed then
        ev.failed[#ev.failed + 1] = { id = id, group = group, status = r.status, output = r.output }
      end
    end
    for _, id in ipairs(f2p) do note("FAIL_TO_PASS", "fail_to_pass", id) end
    for _, id in ipairs(p2p) do note("PASS_TO_PASS", "pass_to_pass", id) end
    return #ev.failed == 0, ev
  end)
  c.options = { runner = opts.runner, inject = inject, fail_to_pass = f2p, pass_to_pass = p2p, timeout_s = timeout }
  return c
end

local function globs(what, key, v, level)
  string_list(what, key, v, level + 1)
  for _, g in ipairs(v or {}) do
    local err = host.glob_error(g)
    if err then error(string.format("%s: '%s': bad glob %q: %s", what, key, g, err), level + 1) end
  end
end

--- The change stays in scope: every changed path (`t.diff.files`) matches `allowed` (when given) and none
--- matches `forbidden`. Paths matching `ignore` (default `{ "**/__pycache__/**" }`) are left out.
function check.scope(opts)
  opts = opts_of("check.scope", opts, { "allowed", "forbidden", "ignore" }, 2)
  globs("check.scope", "allowed", opts.allowed, 2)
  globs("check.scope", "forbidden", opts.forbidden, 2)
  globs("check.scope", "ignore", opts.ignore, 2)
  if opts.allowed == nil and opts.forbidden == nil then
    error("check.scope: give 'allowed', 'forbidden' or both", 2)
  end
  local ignore = opts.ignore or { "**/__pycache__/**" }
  return make("scope", "scope", opts, function(t)
    local changed, violations = evalua.array(), evalua.array()
    for _, f in ipairs(t.diff.files) do
      if not (#ignore > 0 and host.glob_match(ignore, f.path)) then
        changed[#changed + 1] = f.path
        local fi = opts.forbidden and host.glob_match(opts.forbidden, f.path)
        if fi then
          violations[#violations + 1] = { path = f.path, status = f.status, reason = "forbidden: " .. opts.forbidden[fi] }
        elseif opts.allowed and not host.glob_match(opts.allowed, f.path) then
          violations[#violations + 1] = {
            path = f.path, status = f.status, reason = "outside allowed: " .. table.concat(opts.allowed, ", "),
          }
        end
      end
    end
    return #violations == 0, { changed = changed, violations = violations }
  end)
end

-- Every string inside `v` (tool arguments, outbox bodies), one per line.
local function strings_in(v, out)
  if type(v) == "string" then
    out[#out + 1] = v
  elseif type(v) == "table" then
    for k, x in pairs(v) do
      if type(k) == "string" then out[#out + 1] = k end
      strings_in(x, out)
    end
  elseif type(v) == "number" then
    out[#out + 1] = tostring(v)
  end
  return out
end

--- No secret leaks: the values of the environment variables named in `env` and the regexes in `patterns`
--- must not appear in the diff, the answer, the outbox or any tool call's arguments. Evidence is redacted.
function check.no_secrets(opts)
  opts = opts_of("check.no_secrets", opts, { "env", "patterns" }, 2)
  string_list("check.no_secrets", "env", opts.env, 2)
  string_list("check.no_secrets", "patterns", opts.patterns, 2)
  for i, p in ipairs(opts.patterns or {}) do
    local err = host.regex_error(p)
    if err then error(string.format("check.no_secrets: patterns[%d] is not a valid regex: %s", i, err), 2) end
  end
  if #(opts.env or {}) + #(opts.patterns or {}) == 0 then
    error("check.no_secrets: give 'env' (variable names), 'patterns' (regexes) or both", 2)
  end
  return make("no_secrets", "no secrets", opts, function(t)
    local items = { { where = "diff", text = t.diff.text }, { where = "answer", text = t.answer or "" } }
    for i, m in ipairs(t.outbox) do
      items[#items + 1] = { where = "outbox[" .. i .. "]", text = table.concat(strings_in(m, {}), "\n") }
    end
    for _, c in ipairs(t.calls) do
      items[#items + 1] = { where = "call " .. c.id .. " (" .. c.name .. ") arguments",
                            text = table.concat(strings_in(c.args, {}), "\n") }
    end
    local found, notes = host.find_secrets(opts.env or {}, opts.patterns or {}, items)
    local ev = { findings = found, scanned = #items }
    if #notes > 0 then ev.notes = notes end
    return #found == 0, ev
  end)
end

-- In a trial the suite is re-run only to get the running case's functions
-- back: constructors just record their arguments, and `suite:case` builds the
-- checks of that one case (its options were validated when the suite loaded).
local CONSTRUCTORS = { "sql", "files", "outbox", "answer", "json_schema", "tools", "args", "before",
                       "no_loops", "no_writes", "max_calls", "efficiency", "claims_only_after", "ended",
                       "command", "tests", "scope", "no_secrets" }
if not host.validating() then
  for _, name in ipairs(CONSTRUCTORS) do
    check[name] = evalua._lazy(check[name])
  end
else
  -- While the suite loads, a wrong constructor call is reported and the file goes on.
  for _, name in ipairs(CONSTRUCTORS) do
    check[name] = evalua._reported(check[name], "check." .. name)
  end
end

return check
