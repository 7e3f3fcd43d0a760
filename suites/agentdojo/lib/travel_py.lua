-- Python semantics the travel port needs (agentdojo 0.1.35, MIT: ../LICENSE):
-- str(float), datetime.fromisoformat / strptime / isoformat on the ISO text
-- the environment holds, pydantic's list validation, dicts in insertion order.
local D = require("lib.dojo")
local A = require("evalua").array

local P = {}

--- Python's str() of a float (a pydantic float field): 4.0 -> "4.0", 4.25 -> "4.25".
function P.float(x)
  x = x + 0.0
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  if x == math.floor(x) and math.abs(x) < 1e16 then return string.format("%.1f", x) end
  local s
  for p = 1, 17 do
    s = string.format("%." .. p .. "g", x)
    if tonumber(s) == x then break end
  end
  -- Python writes exponents with at least two digits and no leading zeros past them.
  s = s:gsub("e([+-])0*(%d%d)", "e%1%2")
  return s
end

--- Python's repr() of a JSON value (a dict's keys sorted: Lua keeps no order).
function P.repr(v)
  if D.none(v) then return "None" end
  local t = type(v)
  if t == "boolean" then return v and "True" or "False" end
  if t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    return P.float(v)
  end
  if t == "string" then
    local q = (v:find("'", 1, true) and not v:find('"', 1, true)) and '"' or "'"
    local body = v:gsub("\\", "\\\\"):gsub("\n", "\\n"):gsub("\r", "\\r"):gsub("\t", "\\t")
    if q == "'" then body = body:gsub("'", "\\'") end
    return q .. body .. q
  end
  if t ~= "table" then return tostring(v) end
  local parts = {}
  if v[1] ~= nil then
    for i, x in ipairs(v) do parts[i] = P.repr(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  for i, k in ipairs(keys) do parts[i] = P.repr(k) .. ": " .. P.repr(v[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- pydantic_core's input_value: a repr over 50 characters keeps its first 25 and last 24.
function P.input_value(v)
  local r = P.repr(v)
  local n = utf8.len(r) or #r
  if n <= 50 then return r end
  local head = r:sub(1, (utf8.offset(r, 26) or 26) - 1)
  local tail = r:sub(utf8.offset(r, n - 23) or (#r - 23))
  return head .. "..." .. tail
end

local function input_type(v)
  if D.none(v) then return "NoneType" end
  local t = type(v)
  if t == "boolean" then return "bool" end
  if t == "string" then return "str" end
  if t == "number" then return math.type(v) == "integer" and "int" or "float" end
  if t == "table" then return (v[1] ~= nil or next(v) == nil) and "list" or "dict" end
  return t
end

local MESSAGES = {
  string_type = "Input should be a valid string",
  list_type = "Input should be a valid list",
  dict_type = "Input should be a valid dictionary",
  bool_type = "Input should be a valid boolean",
}

-- The pydantic error of value `v` at `loc` against JSON schema `s`, or nil.
local function check_value(loc, v, s, errors)
  if s.anyOf then
    if D.none(v) then return end
    for _, alt in ipairs(s.anyOf) do
      if alt.type ~= "null" then return check_value(loc, v, alt, errors) end
    end
    return
  end
  local kind = input_type(v)
  local code
  if s.type == "string" and kind ~= "str" then code = "string_type"
  elseif s.type == "boolean" and kind ~= "bool" then code = "bool_type"
  elseif s.type == "object" and kind ~= "dict" and next(v) ~= nil then code = "dict_type"
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

--- Validate the arguments as AgentDojo's pydantic Input schema does (lax
--- mode; `coerce` in lib/dojo.lua already raised for a required argument
--- missing): a ValidationError in pydantic's words, e.g. a list given as text.
function P.validate(tool, params, args)
  local props = params.properties or {}
  local names = {}
  for name in pairs(args) do
    if props[name] then names[#names + 1] = name end
  end
  table.sort(names)
  local errors = {}
  for _, name in ipairs(names) do check_value(name, args[name], props[name], errors) end
  if #errors == 0 then return end
  local head = #errors == 1 and "1 validation error" or (#errors .. " validation errors")
  D.raise("ValidationError", head .. " for Input schema for `" .. tool .. "`\n" .. table.concat(errors, "\n"))
end

--- A `list[str]` argument (validated already).
function P.list_arg(args, name)
  return args[name] or {}
end

-- The lower case of code point c for the scripts str.lower() most often meets
-- (Latin-1, Latin Extended-A, Greek, Cyrillic); other code points as they are.
local function lower_cp(c)
  if (c >= 0x41 and c <= 0x5A) or (c >= 0xC0 and c <= 0xDE and c ~= 0xD7) then return c + 32 end
  if c >= 0x100 and c <= 0x17F then
    if c == 0x178 then return 0xFF end
    local odd_upper = (c >= 0x139 and c <= 0x148) or (c >= 0x179 and c <= 0x17E)
    if c ~= 0x130 and c ~= 0x138 and c ~= 0x149 and ((odd_upper and c % 2 == 1) or (not odd_upper and c % 2 == 0)) then
      return c + 1
    end
    return c
  end
  if (c >= 0x391 and c <= 0x3A9 and c ~= 0x3A2) or (c >= 0x410 and c <= 0x42F) then return c + 32 end
  if c >= 0x400 and c <= 0x40F then return c + 80 end
  return c
end

--- Python's str.lower() (İ becomes "i̇", as Python writes it).
function P.lower(s)
  if not s:find("[\128-\255]") then return s:lower() end
  local ok, out = pcall(function()
    local parts = {}
    for _, c in utf8.codes(s) do
      parts[#parts + 1] = c == 0x130 and "i\u{307}" or utf8.char(lower_cp(c))
    end
    return table.concat(parts)
  end)
  return ok and out or s:lower()
end

--- Whether list `t` holds `v` (Python's `v in t`).
function P.contains(t, v)
  for _, x in ipairs(t) do
    if x == v then return true end
  end
  return false
end

--- Python's `needle in haystack` on text.
function P.has(haystack, needle)
  return string.find(haystack, needle, 1, true) ~= nil
end

--- The values of a dict keyed by numeric-text ids (calendar.events,
--- inbox.emails) in insertion order: their ids only grow, so by id.
function P.values(dict)
  local keys = {}
  for k in pairs(dict or {}) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local na, nb = tonumber(a), tonumber(b)
    if na and nb and na ~= nb then return na < nb end
    return a < b
  end)
  local out = {}
  for i, k in ipairs(keys) do out[i] = dict[k] end
  return out
end

--- `max((int(key) for key in d.keys()), default=0) + 1` as text (_get_next_id).
function P.next_id(dict)
  local largest = 0
  for k in pairs(dict or {}) do
    local n = math.tointeger(tonumber(k))
    if n and n > largest then largest = n end
  end
  return tostring(largest + 1)
end

--- A list for JSON: `evalua.array()` when empty.
function P.list(t)
  if #t == 0 then return A() end
  return t
end

-- datetime ---------------------------------------------------------------

local function leap(y) return (y % 4 == 0 and y % 100 ~= 0) or y % 400 == 0 end
local DAYS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

local function days_in(y, m)
  if m == 2 and leap(y) then return 29 end
  return DAYS[m]
end

-- Python's range checks, in datetime's order and words.
local function validate(t)
  if t.year < 1 or t.year > 9999 then D.raise("ValueError", "year " .. t.year .. " is out of range") end
  if t.month < 1 or t.month > 12 then D.raise("ValueError", "month must be in 1..12") end
  if t.day < 1 or t.day > days_in(t.year, t.month) then D.raise("ValueError", "day is out of range for month") end
  if t.hour > 23 then D.raise("ValueError", "hour must be in 0..23") end
  if t.minute > 59 then D.raise("ValueError", "minute must be in 0..59") end
  if t.second > 59 then D.raise("ValueError", "second must be in 0..59") end
  return t
end

-- "HH", "HH:MM", "HHMM", "HH:MM:SS", "HHMMSS", with ".ffffff": hour, minute, second, microsecond or nil.
local function parse_time(s)
  local frac
  local main, f = s:match("^([%d:]+)[.,](%d+)$")
  if main then s, frac = main, f end
  local h, mi, sec = s:match("^(%d%d):(%d%d):(%d%d)$")
  if not h then h, mi, sec = s:match("^(%d%d)(%d%d)(%d%d)$") end
  if not h then h, mi = s:match("^(%d%d):?(%d%d)$") end
  if not h then h = s:match("^(%d%d)$") end
  if not h or (frac and not sec) then return nil end
  local us = 0
  if frac then us = math.tointeger(tonumber((frac .. "000000"):sub(1, 6))) end
  return tonumber(h), tonumber(mi or 0), tonumber(sec or 0), us
end

-- A time zone suffix: "Z", "+HH:MM", "+HHMM", "+HH" as minutes east, and the rest.
local function split_tz(s)
  if s:sub(-1) == "Z" then return s:sub(1, -2), 0 end
  local rest, sign, hh, mm = s:match("^(.-)([+-])(%d%d):?(%d%d)$")
  if not rest then rest, sign, hh = s:match("^(.-)([+-])(%d%d)$") end
  if not rest or rest == "" then return s, nil end
  local off = tonumber(hh) * 60 + tonumber(mm or 0)
  return rest, sign == "-" and -off or off
end

--- `datetime.datetime.fromisoformat(s)` (Python 3.11) as a table.
function P.fromisoformat(s)
  local function bad() D.raise("ValueError", "Invalid isoformat string: '" .. tostring(s) .. "'") end
  if type(s) ~= "string" then D.raise("TypeError", "fromisoformat: argument must be str") end
  local y, m, d, rest = s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)(.*)$")
  if not y then y, m, d, rest = s:match("^(%d%d%d%d)(%d%d)(%d%d)(.*)$") end
  if not y then bad() end
  local t = { year = tonumber(y), month = tonumber(m), day = tonumber(d), hour = 0, minute = 0, second = 0, us = 0 }
  if rest ~= "" then
    local body, tz = split_tz(rest:sub(2))
    local h, mi, sec, us = parse_time(body)
    if not h then bad() end
    t.hour, t.minute, t.second, t.us, t.tz = h, mi, sec, us, tz
  end
  return validate(t)
end

local function num_field(s, i, max_digits, lo, hi)
  local two = s:sub(i, i + 1)
  if max_digits >= 2 and two:match("^%d%d$") and tonumber(two) >= lo and tonumber(two) <= hi then
    return tonumber(two), i + 2
  end
  local one = s:sub(i, i)
  if one:match("^%d$") and tonumber(one) >= lo and tonumber(one) <= hi then return tonumber(one), i + 1 end
  return nil, i
end

--- `datetime.datetime.strptime(s, "%Y-%m-%d")` or with `" %H:%M"` (with_time).
function P.strptime(s, with_time)
  local fmt = with_time and "%Y-%m-%d %H:%M" or "%Y-%m-%d"
  local function bad() D.raise("ValueError", "time data '" .. tostring(s) .. "' does not match format '" .. fmt .. "'") end
  if type(s) ~= "string" then D.raise("TypeError", "strptime() argument 1 must be str, not " .. type(s)) end
  local y = s:match("^(%d%d%d%d)%-")
  if not y then bad() end
  local t = { year = tonumber(y), hour = 0, minute = 0, second = 0, us = 0 }
  local i = 6
  t.month, i = num_field(s, i, 2, 1, 12)
  if not t.month or s:sub(i, i) ~= "-" then bad() end
  t.day, i = num_field(s, i + 1, 2, 1, 31)
  if not t.day then bad() end
  if with_time then
    local sp = s:match("^%s+", i)
    if not sp then bad() end
    t.hour, i = num_field(s, i + #sp, 2, 0, 23)
    if not t.hour or s:sub(i, i) ~= ":" then bad() end
    t.minute, i = num_field(s, i + 1, 2, 0, 59)
    if not t.minute then bad() end
  end
  if i <= #s then D.raise("ValueError", "unconverted data remains: " .. s:sub(i)) end
  return validate(t)
end

--- The datetime as pydantic dumps it ("2024-05-01T09:00:00", "...Z" when UTC).
function P.iso(t)
  local s = string.format("%04d-%02d-%02dT%02d:%02d:%02d", t.year, t.month, t.day, t.hour, t.minute, t.second)
  if t.us ~= 0 then s = s .. string.format(".%06d", t.us) end
  if t.tz == 0 then
    s = s .. "Z"
  elseif t.tz then
    local a = math.abs(t.tz)
    s = s .. string.format("%s%02d:%02d", t.tz < 0 and "-" or "+", a // 60, a % 60)
  end
  return s
end

--- `str(datetime)` from the dumped ISO text: "2024-05-16 09:00:00".
function P.str_iso(text)
  local s = text:gsub("^(%d%d%d%d%-%d%d%-%d%d)T", "%1 ")
  return (s:gsub("Z$", "+00:00"))
end

--- The datetime `hours` later (naive arithmetic, as timedelta on a naive datetime).
function P.add_hours(t, hours)
  local r = { year = t.year, month = t.month, day = t.day, hour = t.hour + hours,
    minute = t.minute, second = t.second, us = t.us, tz = t.tz }
  while r.hour >= 24 do
    r.hour = r.hour - 24
    r.day = r.day + 1
    if r.day > days_in(r.year, r.month) then
      r.day, r.month = 1, r.month + 1
      if r.month > 12 then r.month, r.year = 1, r.year + 1 end
    end
  end
  return r
end

--- The date part of dumped ISO text ("2024-05-01").
function P.date_of(text) return text:sub(1, 10) end

--- `strftime("%m-%d")` of dumped ISO text.
function P.month_day(text) return text:sub(6, 10) end

return P
