-- JSON as τ-bench's Python writes and reads it: `json.dumps` (", " and ": "
-- separators, non-ASCII escaped, floats as Python's repr) and `json.loads`
-- (keys keep their order, 3 and 3.0 stay apart), plus Python's `round` and
-- `str` for numbers. τ-bench's tools return `json.dumps(record)`: with these
-- a port returns the same text, byte for byte.
--
-- Objects decoded here remember their key order (`keys(obj)`); `set` appends
-- a new key at the end as a Python dict does, `del` removes one. Arrays carry
-- a marker so that an empty one encodes as [] (an empty object as {}).
--
-- The order and the marker live in each table's own metatable, not in tables
-- of this module: a tool call leaves this module as it found it, so evalua
-- keeps reusing the evaluated suite from one trial to the next (it does so
-- only while nothing reachable from the suite changed).

local M = {}

local KEYS = {}       -- the field of an object's metatable that lists its keys, in order
local ARRAY_MT = {}   -- the metatable of an array (shared, never changed)
-- The order of a table that came with a metatable of its own (none of this
-- port's do): kept aside, as every order was before.
local ORDER = setmetatable({}, { __mode = "k" })

local function order_of(o)
  local mt = getmetatable(o)
  if type(mt) == "table" then
    local keys = rawget(mt, KEYS)
    if keys then return keys end
  end
  return ORDER[o]
end

local function set_order(o, order)
  local mt = getmetatable(o)
  if mt == nil then
    setmetatable(o, { [KEYS] = order })
  elseif type(mt) == "table" and rawget(mt, KEYS) then
    rawset(mt, KEYS, order)
  else
    ORDER[o] = order
  end
end

--- A new ordered object, optionally from a list of { key, value } pairs.
function M.object(pairs_list)
  local o = setmetatable({}, { [KEYS] = {} })
  for _, kv in ipairs(pairs_list or {}) do M.set(o, kv[1], kv[2]) end
  return o
end

--- A new array (a plain list that encodes as [] when empty).
function M.array(list)
  return setmetatable(list or {}, ARRAY_MT)
end

function M.is_array(t)
  return getmetatable(t) == ARRAY_MT
end

--- The keys of an object, in order (keys set without `set` come last, sorted).
function M.keys(o)
  local order = order_of(o)
  local out, seen = {}, {}
  for _, k in ipairs(order or {}) do
    if o[k] ~= nil and not seen[k] then
      out[#out + 1] = k
      seen[k] = true
    end
  end
  local rest = {}
  for k in pairs(o) do
    if type(k) == "string" and not seen[k] then rest[#rest + 1] = k end
  end
  table.sort(rest)
  for _, k in ipairs(rest) do out[#out + 1] = k end
  return out
end

--- obj[k] = v, appending k to the key order when it is new (a Python dict's assignment).
function M.set(o, k, v)
  local order = order_of(o)
  if order == nil then
    order = {}
    set_order(o, order)
  end
  -- A key absent now is not in the order (`del` took it out; `keys` skips
  -- one whose value was cleared without `del`).
  if o[k] == nil then order[#order + 1] = k end
  o[k] = v
end

--- del obj[k].
function M.del(o, k)
  o[k] = nil
  local order = order_of(o)
  if order then
    for i = #order, 1, -1 do
      if order[i] == k then table.remove(order, i) end
    end
  end
end

--- A copy of `v` whose objects list `first` keys (that they have) first, in
--- that order, then the others sorted: the order Python would keep for a
--- dict an agent wrote with the keys in its schema's order.
function M.ordered(v, first)
  if type(v) ~= "table" then return v end
  -- An array: marked here, or a list, or an empty table with evalua's array marker (from JSON).
  if M.is_array(v) or v[1] ~= nil or (next(v) == nil and getmetatable(v) ~= nil and order_of(v) == nil) then
    local out = M.array({})
    for i, x in ipairs(v) do out[i] = M.ordered(x, first) end
    return out
  end
  local o = M.object()
  for _, k in ipairs(first or {}) do
    if v[k] ~= nil then M.set(o, k, M.ordered(v[k], first)) end
  end
  local rest = {}
  for k in pairs(v) do
    if o[k] == nil then rest[#rest + 1] = k end
  end
  table.sort(rest)
  for _, k in ipairs(rest) do M.set(o, k, M.ordered(v[k], first)) end
  return o
end

--- A deep copy (Python's copy.deepcopy), keeping key order and array marks.
function M.copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  if M.is_array(v) then setmetatable(out, ARRAY_MT) end
  local order = order_of(v)
  if order then
    local keys = {}
    for i, k in ipairs(order) do keys[i] = k end
    set_order(out, keys)
  end
  for k, x in pairs(v) do out[k] = M.copy(x) end
  return out
end

----------------------------------------------------------------------------
-- Numbers as Python prints them.

--- Python's repr of a float: the shortest digits that read back the same,
--- in fixed notation from 1e-4 up to 1e16, else in exponent notation.
function M.float_repr(x)
  if x ~= x then return "NaN" end
  if x == math.huge then return "Infinity" end
  if x == -math.huge then return "-Infinity" end
  if x == 0 then return (1 / x < 0) and "-0.0" or "0.0" end
  local s
  for p = 1, 17 do
    s = string.format("%." .. p .. "e", x)
    if tonumber(s) == x then break end
  end
  -- s is like "-1.2345e+03": digits and exponent.
  local sign, int, frac, exp = s:match("^(-?)(%d)%.?(%d*)e([-+]%d+)$")
  if not int then
    sign, int, exp = s:match("^(-?)(%d)e([-+]%d+)$")
    frac = ""
  end
  local digits = (int .. frac):gsub("0+$", "")
  if digits == "" then digits = "0" end
  local e = tonumber(exp)
  if e >= -4 and e < 16 then
    -- Fixed notation: the decimal point goes after digit e + 1.
    local point = e + 1
    local out
    if point <= 0 then
      out = "0." .. string.rep("0", -point) .. digits
    elseif point >= #digits then
      out = digits .. string.rep("0", point - #digits) .. ".0"
    else
      out = digits:sub(1, point) .. "." .. digits:sub(point + 1)
    end
    return sign .. out
  end
  local mant = digits:sub(1, 1)
  if #digits > 1 then mant = mant .. "." .. digits:sub(2) end
  return string.format("%s%se%s%02d", sign, mant, e < 0 and "-" or "+", math.abs(e))
end

--- Python's str() of a number (int or float).
function M.num(x)
  if math.type(x) == "integer" then return string.format("%d", x) end
  return M.float_repr(x)
end

--- Python's round(x, n): an int stays an int; a float is rounded half to
--- even on its exact binary value (what C's printf does).
function M.round(x, n)
  if math.type(x) == "integer" then return x end
  n = n or 0
  local r = tonumber(string.format("%." .. n .. "f", x))
  if n == 0 then return math.tointeger(r) or r end
  return r + 0.0
end

----------------------------------------------------------------------------
-- Encoding: json.dumps(v) with Python's defaults.

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
              ["\b"] = "\\b", ["\f"] = "\\f" }

local function encode_string(s)
  local out = { '"' }
  for _, c in utf8.codes(s) do
    local ch = utf8.char(c)
    if ESC[ch] then
      out[#out + 1] = ESC[ch]
    elseif c < 0x20 or c >= 0x7f then
      if c >= 0x10000 then
        local v = c - 0x10000
        out[#out + 1] = string.format("\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
      else
        out[#out + 1] = string.format("\\u%04x", c)
      end
    else
      out[#out + 1] = ch
    end
  end
  out[#out + 1] = '"'
  return table.concat(out)
end
M.encode_string = encode_string

local NULL = {}
M.null = NULL

local function encode(v, out)
  local t = type(v)
  if v == nil or v == NULL then
    out[#out + 1] = "null"
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif t == "number" then
    out[#out + 1] = M.num(v)
  elseif t == "string" then
    out[#out + 1] = encode_string(v)
  elseif t == "table" then
    if M.is_array(v) or v[1] ~= nil then
      out[#out + 1] = "["
      for i, x in ipairs(v) do
        if i > 1 then out[#out + 1] = ", " end
        encode(x, out)
      end
      out[#out + 1] = "]"
    else
      out[#out + 1] = "{"
      for i, k in ipairs(M.keys(v)) do
        if i > 1 then out[#out + 1] = ", " end
        out[#out + 1] = encode_string(k)
        out[#out + 1] = ": "
        encode(v[k], out)
      end
      out[#out + 1] = "}"
    end
  elseif t == "userdata" then
    out[#out + 1] = "null"   -- evalua.null
  else
    error("cannot encode a " .. t .. " as JSON", 0)
  end
end

--- json.dumps(v): Python's text for `v`.
function M.dumps(v)
  local out = {}
  encode(v, out)
  return table.concat(out)
end

----------------------------------------------------------------------------
-- Decoding: json.loads(s), objects in order.

local function decode_error(s, i, what)
  error(string.format("JSON: %s at character %d", what, i), 0)
end

local ESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local function skip(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local parse

local function parse_string(s, i)
  -- s:sub(i, i) == '"'
  local out = {}
  local j = i + 1
  while true do
    local a, b = s:find('[\\"]', j)
    if not a then decode_error(s, i, "unterminated string") end
    out[#out + 1] = s:sub(j, a - 1)
    if s:sub(a, a) == '"' then return table.concat(out), a + 1 end
    local e = s:sub(a + 1, a + 1)
    if e == "u" then
      local hex = s:sub(a + 2, a + 5)
      local c = tonumber(hex, 16)
      if not c or #hex ~= 4 then decode_error(s, a, "bad \\u escape") end
      local nexti = a + 6
      if c >= 0xD800 and c <= 0xDBFF and s:sub(nexti, nexti + 1) == "\\u" then
        local lo = tonumber(s:sub(nexti + 2, nexti + 5), 16)
        if lo and lo >= 0xDC00 and lo <= 0xDFFF then
          c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00)
          nexti = nexti + 6
        end
      end
      out[#out + 1] = utf8.char(c)
      j = nexti
    elseif ESCAPES[e] then
      out[#out + 1] = ESCAPES[e]
      j = a + 2
    else
      decode_error(s, a, "bad escape")
    end
  end
end

local function parse_number(s, i)
  local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  if not num or num == "" or num == "-" then decode_error(s, i, "bad value") end
  local v
  if num:find("[.eE]") then
    v = tonumber(num)
    if v then v = v + 0.0 end
  else
    v = math.tointeger(tonumber(num)) or tonumber(num)
  end
  if v == nil then decode_error(s, i, "bad number") end
  return v, i + #num
end

parse = function(s, i)
  i = skip(s, i)
  local c = s:sub(i, i)
  if c == "{" then
    local o = M.object()
    i = skip(s, i + 1)
    if s:sub(i, i) == "}" then return o, i + 1 end
    while true do
      if s:sub(i, i) ~= '"' then decode_error(s, i, "expected a key") end
      local k
      k, i = parse_string(s, i)
      i = skip(s, i)
      if s:sub(i, i) ~= ":" then decode_error(s, i, "expected ':'") end
      local v
      v, i = parse(s, i + 1)
      if v == nil then v = NULL end
      M.set(o, k, v)
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "}" then return o, i + 1 end
      if d ~= "," then decode_error(s, i, "expected ',' or '}'") end
      i = skip(s, i + 1)
    end
  elseif c == "[" then
    local a = M.array({})
    i = skip(s, i + 1)
    if s:sub(i, i) == "]" then return a, i + 1 end
    while true do
      local v
      v, i = parse(s, i)
      if v == nil then v = NULL end
      a[#a + 1] = v
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "]" then return a, i + 1 end
      if d ~= "," then decode_error(s, i, "expected ',' or ']'") end
      i = i + 1
    end
  elseif c == '"' then
    return parse_string(s, i)
  elseif s:sub(i, i + 3) == "true" then
    return true, i + 4
  elseif s:sub(i, i + 4) == "false" then
    return false, i + 5
  elseif s:sub(i, i + 3) == "null" then
    return nil, i + 4
  else
    return parse_number(s, i)
  end
end

--- json.loads(s): objects remember their key order; JSON null is `null` (a
--- sentinel) inside objects and arrays, nil at the top.
function M.loads(s)
  local v, i = parse(s, 1)
  i = skip(s, i)
  if i <= #s then decode_error(s, i, "extra data") end
  return v
end

return M
