-- Python semantics the workspace port needs (agentdojo 0.1.35, MIT: ../LICENSE):
-- str.lower on code points, `in` on text, len in code points, datetimes as the
-- ISO text pydantic dumps (strptime, fromisoformat, arithmetic), email
-- addresses as pydantic's EmailStr checks and normalises them, and difflib's
-- SequenceMatcher (ratio, opcodes), which DeepDiff and injection_task_13 use.
local D = require("lib.dojo")
local A = require("evalua").array

local P = {}

-- str.lower: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic capitals.
local function lower_cp(c)
  if c >= 65 and c <= 90 then return c + 32 end
  if c < 128 then return c end
  if (c >= 0xC0 and c <= 0xDE and c ~= 0xD7) then return c + 32 end
  if c >= 0x100 and c <= 0x137 and c % 2 == 0 then return c + 1 end
  if c >= 0x139 and c <= 0x148 and c % 2 == 1 then return c + 1 end
  if c >= 0x14A and c <= 0x177 and c % 2 == 0 then return c + 1 end
  if c >= 0x391 and c <= 0x3A9 and c ~= 0x3A2 then return c + 32 end
  if c >= 0x410 and c <= 0x42F then return c + 32 end
  if c >= 0x400 and c <= 0x40F then return c + 80 end
  return c
end

function P.lower(s)
  if not s:find("[\128-\255]") then return s:lower() end
  if utf8.len(s) == nil then return s:lower() end
  local out = {}
  for _, c in utf8.codes(s) do out[#out + 1] = utf8.char(lower_cp(c)) end
  return table.concat(out)
end

--- Python's `needle in haystack` on text.
function P.contains(haystack, needle)
  return haystack:find(needle, 1, true) ~= nil
end

--- `needle.lower() in haystack.lower()`.
function P.icontains(haystack, needle)
  return P.contains(P.lower(haystack), P.lower(needle))
end

--- len(s): code points (bytes if the text is not UTF-8).
function P.len(s)
  return utf8.len(s) or #s
end

--- The code points of a text, as a list (bytes if not UTF-8).
function P.chars(s)
  local out = {}
  if utf8.len(s) == nil then
    for i = 1, #s do out[i] = s:sub(i, i) end
    return out
  end
  for _, c in utf8.codes(s) do out[#out + 1] = utf8.char(c) end
  return out
end

function P.startswith(s, prefix)
  return s:sub(1, #prefix) == prefix
end

function P.strip(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

--- repr() of a text, as Python writes it.
function P.repr(s)
  if type(s) ~= "string" then return tostring(s) end
  local q = "'"
  if s:find("'", 1, true) and not s:find('"', 1, true) then q = '"' end
  local body = s:gsub("\\", "\\\\"):gsub("\n", "\\n"):gsub("\r", "\\r"):gsub("\t", "\\t")
  if q == "'" then body = body:gsub("'", "\\'") end
  return q .. body .. q
end

--- Python's type name of a JSON value.
function P.type_name(v)
  if D.none(v) then return "NoneType" end
  local t = type(v)
  if t == "string" then return "str" end
  if t == "boolean" then return "bool" end
  if t == "number" then return math.type(v) == "integer" and "int" or "float" end
  return "dict"
end

--- A shallow copy of a list, as a JSON list.
function P.list(t)
  local out = A()
  for i, v in ipairs(t or {}) do out[i] = v end
  return out
end

--- A deep copy of a JSON value (lists stay lists).
function P.copy(v)
  if type(v) ~= "table" then return v end
  local out = getmetatable(v) and setmetatable({}, getmetatable(v)) or {}
  for k, x in pairs(v) do out[k] = P.copy(x) end
  return out
end

--- Python's == on JSON values (dicts unordered, lists ordered).
function P.equal(a, b)
  if rawequal(a, b) then return true end
  if D.none(a) or D.none(b) then return D.none(a) and D.none(b) end
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do
    if not P.equal(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

--- A set of texts (a table text → true) from a list.
function P.set(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

function P.set_equal(a, b)
  for k in pairs(a) do if not b[k] then return false end end
  for k in pairs(b) do if not a[k] then return false end end
  return true
end

function P.set_size(s)
  local n = 0
  for _ in pairs(s) do n = n + 1 end
  return n
end

--- The keys of a table, sorted as Python's int(key) would order them (text keys last).
function P.numeric_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(x, y)
    local a, b = tonumber(x), tonumber(y)
    if a and b and a ~= b then return a < b end
    if (a ~= nil) ~= (b ~= nil) then return a ~= nil end
    return x < y
  end)
  return keys
end

-- Dates and datetimes ------------------------------------------------------

local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local doy = (153 * (m + (m > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = (z >= 0 and z or z - 146096) // 146097
  local doe = z - era * 146097
  local yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
  local mp = (5 * doy + 2) // 153
  local d = doy - (153 * mp + 2) // 5 + 1
  local m = mp + (mp < 10 and 3 or -9)
  return m <= 2 and y + 1 or y, m, d
end

local function days_in_month(y, m)
  local n = ({ 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 })[m]
  if m == 2 and (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) then n = 29 end
  return n
end

--- A datetime as { y, m, d, H, M, S, us, tz } from pydantic's ISO text
--- (date-only text is midnight); nil if it is not one.
function P.parse_datetime(s)
  if type(s) ~= "string" then return nil end
  local y, mo, d, rest = s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)(.*)$")
  if not y then return nil end
  local t = { y = tonumber(y), m = tonumber(mo), d = tonumber(d), H = 0, M = 0, S = 0, us = 0, tz = "" }
  if rest ~= "" then
    local H, M, tail = rest:match("^[T ](%d%d):(%d%d)(.*)$")
    if not H then return nil end
    t.H, t.M = tonumber(H), tonumber(M)
    local S, tail2 = tail:match("^:(%d%d)(.*)$")
    if S then
      t.S, tail = tonumber(S), tail2
      local frac, tail3 = tail:match("^[.,](%d+)(.*)$")
      if frac then
        t.us, tail = tonumber((frac .. "000000"):sub(1, 6)), tail3
      end
    end
    if tail == "Z" or tail == "+00:00" then
      t.tz = "Z"
    elseif tail:match("^[+-]%d%d:?%d%d$") then
      t.tz = tail:sub(1, 3) .. ":" .. tail:sub(-2)
    elseif tail ~= "" then
      return nil
    end
  end
  if t.m < 1 or t.m > 12 or t.d < 1 or t.d > days_in_month(t.y, t.m) or t.H > 23 or t.M > 59 or t.S > 59 then
    return nil
  end
  return t
end

--- Seconds since 1970 of a datetime (naive: as written), microseconds apart.
function P.seconds(t)
  return days_from_civil(t.y, t.m, t.d) * 86400 + t.H * 3600 + t.M * 60 + t.S, t.us
end

function P.from_seconds(secs, us, tz)
  local days = secs // 86400
  local rem = secs - days * 86400
  local y, m, d = civil_from_days(days)
  return { y = y, m = m, d = d, H = rem // 3600, M = rem % 3600 // 60, S = rem % 60, us = us or 0, tz = tz or "" }
end

--- date.isoformat()
function P.date_iso(t)
  return string.format("%04d-%02d-%02d", t.y, t.m, t.d)
end

--- time.isoformat()
function P.time_iso(t)
  local s = string.format("%02d:%02d:%02d", t.H, t.M, t.S)
  if t.us ~= 0 then s = s .. string.format(".%06d", t.us) end
  return s
end

--- The datetime as pydantic dumps it (model_dump(mode="json")).
function P.datetime_iso(t)
  return P.date_iso(t) .. "T" .. P.time_iso(t) .. t.tz
end

--- datetime.fromisoformat(s), as dumped text; raises as Python does.
function P.fromisoformat(s)
  local t = P.parse_datetime(s)
  if t == nil then D.raise("ValueError", "Invalid isoformat string: " .. P.repr(s)) end
  return P.datetime_iso(t)
end

--- Whether two dumped datetimes are equal datetimes (naive vs aware: never).
function P.datetime_eq(a, b)
  local x, y = P.parse_datetime(a), P.parse_datetime(b)
  if x == nil or y == nil then return a == b end
  return P.datetime_iso(x) == P.datetime_iso(y)
end

--- Whether dumped datetime a is later than b (both naive, as in the environment).
function P.datetime_gt(a, b)
  local x, y = P.parse_datetime(a), P.parse_datetime(b)
  local xs, xu = P.seconds(x)
  local ys, yu = P.seconds(y)
  return xs > ys or (xs == ys and xu > yu)
end

-- strptime's fields: the regular expressions of Python's _strptime, in order.
local FIELDS = {
  Y = { "%d%d%d%d" },
  m = { "1[0-2]", "0[1-9]", "[1-9]" },
  d = { "3[01]", "[12]%d", "0[1-9]", "[1-9]", " [1-9]" },
  H = { "2[0-3]", "[0-1]%d", "%d" },
  M = { "[0-5]%d", "%d" },
}

-- Match `format`'s items from position `i` of `s` (backtracking over the
-- alternatives, as the regular expression does); the fields, and where it ended.
local function match_items(s, i, items, k, got)
  if k > #items then return got, i end
  local item = items[k]
  if item.lit then
    local j = s:find(item.lit, i)
    if j ~= i then return nil end
    local _, e = s:find(item.lit, i)
    return match_items(s, e + 1, items, k + 1, got)
  end
  for _, alt in ipairs(FIELDS[item.field]) do
    local _, e = s:find("^" .. alt, i)
    if e then
      got[item.field] = tonumber((s:sub(i, e):gsub(" ", "")))
      local r, ended = match_items(s, e + 1, items, k + 1, got)
      if r then return r, ended end
    end
  end
  return nil
end

local function format_items(format)
  local items = {}
  local i = 1
  while i <= #format do
    local c = format:sub(i, i)
    if c == "%" then
      items[#items + 1] = { field = format:sub(i + 1, i + 1) }
      i = i + 2
    elseif c == " " then
      items[#items + 1] = { lit = "^%s+" }
      i = i + 1
    else
      items[#items + 1] = { lit = "^" .. c:gsub("%p", "%%%0") }
      i = i + 1
    end
  end
  return items
end

--- datetime.strptime(s, format) for formats of %Y %m %d %H %M, as dumped
--- datetime text; raises ValueError with Python's messages.
function P.strptime(s, format)
  local got, ended = match_items(s, 1, format_items(format), 1, {})
  if got == nil then
    D.raise("ValueError", "time data " .. P.repr(s) .. " does not match format " .. P.repr(format))
  end
  if ended <= #s then D.raise("ValueError", "unconverted data remains: " .. s:sub(ended)) end
  local t = { y = got.Y or 1900, m = got.m or 1, d = got.d or 1, H = got.H or 0, M = got.M or 0, S = 0, us = 0, tz = "" }
  if t.d > days_in_month(t.y, t.m) then D.raise("ValueError", "day is out of range for month") end
  return t
end

--- The frozen clock as datetime.now() dumps it.
function P.now()
  return os.date("!%Y-%m-%dT%H:%M:%S")
end

-- Email addresses ------------------------------------------------------------

local SPECIAL = { test = true, invalid = true, localhost = true, example = true, local_ = true, arpa = true, onion = true }

-- email-validator's reason an address is invalid (the common ones), or nil.
local function email_reason(addr)
  local at = addr:match("^.*()@")
  if at == nil then return "An email address must have an @-sign." end
  local loc, dom = addr:sub(1, at - 1), addr:sub(at + 1)
  if loc == "" then return "There must be something before the @-sign." end
  if dom == "" then return "There must be something after the @-sign." end
  if loc:sub(1, 1) == "." then return "An email address cannot start with a period." end
  if loc:sub(-1) == "." then return "An email address cannot have a period immediately before the @-sign." end
  if loc:find("..", 1, true) or dom:find("..", 1, true) then return "An email address cannot have two periods in a row." end
  local bad = loc:match("[^%w!#$%%&'*+%-/=?^_`{|}~.\128-\255]")
  if bad then
    return "The email address contains invalid characters before the @-sign: " .. (bad == " " and "SPACE" or P.repr(bad)) .. "."
  end
  if dom:sub(1, 1) == "-" then return "An email address cannot have a hyphen immediately after the @-sign." end
  local dbad = dom:match("[^%w%-.\128-\255]")
  if dbad then return "The part after the @-sign contains invalid characters: " .. P.repr(dbad) .. "." end
  if not dom:find(".", 1, true) then return "The part after the @-sign is not valid. It should have a period." end
  local tld = P.lower(dom:match("([^.]*)$"))
  if SPECIAL[tld] or tld == "local" then
    return "The part after the @-sign is a special-use or reserved name that cannot be used with email."
  end
  if tld:match("^%d+$") or tld == "" then return "The part after the @-sign is not valid. It is not within a valid top-level domain." end
  return nil
end

--- pydantic's EmailStr: the normalised address (domain in lower case), or
--- nil and the error pydantic reports.
function P.email(value)
  if type(value) ~= "string" then
    return nil, "Input should be a valid string [type=string_type, input_value=" .. P.repr(value) .. ", input_type=" .. P.type_name(value) .. "]"
  end
  local function fail(reason)
    return nil, "value is not a valid email address: " .. reason .. " [type=value_error, input_value=" .. P.repr(value) .. ", input_type=str]"
  end
  if #value > 254 then return fail("Length must not exceed 254 characters") end
  if value:find("[\r\n]") then return fail("Carriage return and line feed characters are not allowed") end
  local addr = value:match("^%s*[^<]*<%s*(.-)%s*>%s*$") or value
  addr = P.strip(addr)
  local reason = email_reason(addr)
  if reason then return fail(reason) end
  local at = addr:match("^.*()@")
  return addr:sub(1, at) .. P.lower(addr:sub(at + 1))
end

--- Validate the email fields of a model (pydantic, at construction): each
--- `fields` entry { name, list = bool }; every error, as pydantic lists them.
function P.validate_emails(model, obj, fields)
  local errors = {}
  for _, f in ipairs(fields) do
    local v = obj[f.name]
    if f.list then
      for i, x in ipairs(v) do
        local ok, err = P.email(x)
        if ok then v[i] = ok else errors[#errors + 1] = f.name .. "." .. (i - 1) .. "\n  " .. err end
      end
    else
      local ok, err = P.email(v)
      if ok then obj[f.name] = ok else errors[#errors + 1] = f.name .. "\n  " .. err end
    end
  end
  if #errors > 0 then
    local n = #errors == 1 and "1 validation error" or (#errors .. " validation errors")
    D.raise("ValidationError", n .. " for " .. model .. "\n" .. table.concat(errors, "\n"))
  end
end

-- The tools' arguments -----------------------------------------------------------

-- Each tool's parameters in its signature's order (pydantic reports in that order).
local PARAMS = {
  send_email = { "recipients", "subject", "body", "attachments", "cc", "bcc" },
  search_emails = { "query", "sender" },
  search_calendar_events = { "query", "date" },
  create_calendar_event = { "title", "start_time", "end_time", "description", "participants", "location" },
  reschedule_calendar_event = { "event_id", "new_start_time", "new_end_time" },
  add_calendar_event_participants = { "event_id", "participants" },
  append_to_file = { "file_id", "content" },
  create_file = { "filename", "content" },
  share_file = { "file_id", "email", "permission" },
}

--- pydantic_core's input_value: a repr over 50 characters keeps its first 25 and last 24.
function P.input_value(v)
  local r = P.pyrepr(v)
  local n = P.len(r)
  if n <= 50 then return r end
  local c = P.chars(r)
  return table.concat(c, "", 1, 25) .. "..." .. table.concat(c, "", n - 23, n)
end

--- Python's repr() of a JSON value (a dict's keys sorted: Lua keeps no order).
function P.pyrepr(v)
  if D.none(v) then return "None" end
  local t = type(v)
  if t == "boolean" then return v and "True" or "False" end
  if t == "string" then return P.repr(v) end
  if t ~= "table" then return tostring(v) end
  local parts = {}
  if v[1] ~= nil or (getmetatable(v) ~= nil and next(v) == nil) then
    for i, x in ipairs(v) do parts[i] = P.pyrepr(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  for _, k in ipairs(P.numeric_keys(v)) do parts[#parts + 1] = P.repr(k) .. ": " .. P.pyrepr(v[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function input_type(v)
  if type(v) == "table" then return (v[1] ~= nil or next(v) == nil) and "list" or "dict" end
  return P.type_name(v)
end

local MESSAGES = {
  string_type = "Input should be a valid string",
  list_type = "Input should be a valid list",
  dict_type = "Input should be a valid dictionary",
  enum = "Input should be 'r' or 'rw'",
}

local function check_value(loc, v, s, errors)
  if s.anyOf then
    if D.none(v) then return end
    return check_value(loc, v, s.anyOf[1], errors)
  end
  local kind, code = input_type(v), nil
  if s["$ref"] then
    if v ~= "r" and v ~= "rw" then code = "enum" end
  elseif s.type == "string" and kind ~= "str" then
    code = "string_type"
  elseif s.type == "object" and kind ~= "dict" and not (type(v) == "table" and next(v) == nil) then
    code = "dict_type"
  elseif s.type == "array" then
    if kind ~= "list" then
      code = "list_type"
    elseif s.items then
      for i, x in ipairs(v) do check_value(loc .. "." .. (i - 1), x, s.items, errors) end
    end
  end
  if code then
    errors[#errors + 1] = loc .. "\n  " .. MESSAGES[code] .. " [type=" .. code .. ", input_value=" .. P.input_value(v)
      .. ", input_type=" .. kind .. "]\n    For further information visit https://errors.pydantic.dev/2.14/v/" .. code
  end
end

--- Validate a tool's arguments as AgentDojo's runtime does with the tool's
--- pydantic Input schema (lax mode; lib/dojo.lua raised already for a
--- required argument missing), in pydantic's words.
function P.validate_args(tool, params, args)
  local props = params.properties or {}
  local names = PARAMS[tool] or params.required or {}
  local errors = {}
  for _, name in ipairs(names) do
    if args[name] ~= nil and props[name] then check_value(name, args[name], props[name], errors) end
  end
  if #errors == 0 then return end
  local head = #errors == 1 and "1 validation error" or (#errors .. " validation errors")
  D.raise("ValidationError", head .. " for Input schema for `" .. tool .. "`\n" .. table.concat(errors, "\n"))
end

return P
