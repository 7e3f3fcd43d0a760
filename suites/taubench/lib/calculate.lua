-- τ-bench's `calculate` tool: `str(round(float(eval(expression)), 2))` on an
-- expression of digits, + - * / ( ) . and spaces, with Python's arithmetic
-- (int and float, true and floor division, **, unary signs, the empty tuple)
-- and Python 3.11's error messages for what such an expression can get
-- wrong. One approximation: Python's integers have no bound; here an integer
-- past 2^63 goes on as a float (a result then differs at most in its last
-- digits, and "int too large to convert to float" still comes past 1.8e308).

local J = require("lib.pyjson")

local M = {}

local SYNTAX = "invalid syntax (<string>, line 1)"

local function fail(msg) error({ py = msg }, 0) end

-- Values: { t = "int", v = integer }, { t = "big", v = float } (an int past
-- 2^63), { t = "float", v = float }, { t = "tuple" } (the empty tuple).
local function int(v) return { t = "int", v = v } end
local function flt(v) return { t = "float", v = v } end
local TUPLE = { t = "tuple" }

local function pytype(x)
  if x.t == "big" then return "int" end
  return x.t
end

local function tofloat(x)
  if x.t == "int" then return x.v + 0.0 end
  return x.v
end

local function isint(x) return x.t == "int" or x.t == "big" end

-- An integer result of a and b (Lua integers) by op, or a "big" one when it overflows.
local function int_result(exact, approx)
  if math.type(exact) == "integer" and exact + 0.0 == approx then return int(exact) end
  if math.type(exact) == "integer" and math.abs(approx) < 2 ^ 62 then return int(exact) end
  return { t = "big", v = approx }
end

-- ------------------------------------------------------------------------
-- Tokens

local function tokenize(s)
  local toks, i, n = {}, 1, #s
  while i <= n do
    local c = s:sub(i, i)
    if c == " " then
      i = i + 1
    elseif c:match("[%d.]") then
      local num = s:match("^%d*%.?%d*", i)
      if num == "." then fail(SYNTAX) end
      toks[#toks + 1] = { k = "num", s = num }
      i = i + #num
    elseif s:sub(i, i + 1) == "**" or s:sub(i, i + 1) == "//" then
      toks[#toks + 1] = { k = s:sub(i, i + 1) }
      i = i + 2
    else
      toks[#toks + 1] = { k = c }
      i = i + 1
    end
  end
  return toks
end

-- Python's tokenizer complains about brackets before the parser looks.
local function check_brackets(toks)
  local depth = 0
  for _, t in ipairs(toks) do
    if t.k == "(" then
      depth = depth + 1
    elseif t.k == ")" then
      depth = depth - 1
      if depth < 0 then fail("unmatched ')' (<string>, line 1)") end
    end
  end
  if depth > 0 then fail("'(' was never closed (<string>, line 1)") end
end

local function number(tok)
  local s = tok.s
  if s:find(".", 1, true) then return flt(tonumber((s:sub(1, 1) == "." and "0" or "") .. s .. (s:sub(-1) == "." and "0" or ""))) end
  if s:match("^0+[1-9]") then
    fail("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)")
  end
  local v = math.tointeger(tonumber(s))
  if v then return int(v) end
  return { t = "big", v = tonumber(s) + 0.0 }
end

-- ------------------------------------------------------------------------
-- Arithmetic

local OPNAME = { ["+"] = "+", ["-"] = "-", ["*"] = "*", ["/"] = "/", ["//"] = "//", ["**"] = "** or pow()" }

local function unsupported(op, a, b)
  fail(string.format("unsupported operand type(s) for %s: '%s' and '%s'", OPNAME[op], pytype(a), pytype(b)))
end

-- Python's float floor division (floatobject.c).
local function float_floordiv(vx, wx)
  local mod = math.fmod(vx, wx)
  local div = (vx - mod) / wx
  if mod ~= 0 and ((wx < 0) ~= (mod < 0)) then div = div - 1.0 end
  local floordiv
  if div ~= 0 then
    floordiv = math.floor(div) + 0.0
    if div - floordiv > 0.5 then floordiv = floordiv + 1.0 end
  else
    floordiv = (vx / wx < 0 or (vx / wx == 0 and 1 / (vx / wx) < 0)) and -0.0 or 0.0
  end
  return floordiv
end

local function binop(op, a, b)
  if a.t == "tuple" or b.t == "tuple" then
    if op == "+" and a.t == "tuple" and b.t == "tuple" then return TUPLE end
    if op == "+" and a.t == "tuple" then
      fail(string.format("can only concatenate tuple (not \"%s\") to tuple", pytype(b)))
    end
    if op == "*" then
      if a.t == "tuple" and b.t == "tuple" then fail("can't multiply sequence by non-int of type 'tuple'") end
      local other = a.t == "tuple" and b or a
      if isint(other) then return TUPLE end
      fail("can't multiply sequence by non-int of type '" .. pytype(other) .. "'")
    end
    unsupported(op, a, b)
  end
  local both_int = isint(a) and isint(b)
  if op == "+" or op == "-" or op == "*" then
    if both_int then
      local x, y = tofloat(a), tofloat(b)
      local approx = op == "+" and x + y or op == "-" and x - y or x * y
      if a.t == "int" and b.t == "int" then
        local exact = op == "+" and a.v + b.v or op == "-" and a.v - b.v or a.v * b.v
        return int_result(exact, approx)
      end
      return { t = "big", v = approx }
    end
    local x, y = tofloat(a), tofloat(b)
    if a.t == "big" and x == math.huge or b.t == "big" and y == math.huge then fail("int too large to convert to float") end
    return flt(op == "+" and x + y or op == "-" and x - y or x * y)
  elseif op == "/" then
    local x, y = tofloat(a), tofloat(b)
    if y == 0 then fail(both_int and "division by zero" or "float division by zero") end
    return flt(x / y)
  elseif op == "//" then
    if both_int then
      if tofloat(b) == 0 then fail("integer division or modulo by zero") end
      if a.t == "int" and b.t == "int" then return int(a.v // b.v) end
      return { t = "big", v = math.floor(tofloat(a) / tofloat(b)) + 0.0 }
    end
    local x, y = tofloat(a), tofloat(b)
    if y == 0 then fail("float floor division by zero") end
    return flt(float_floordiv(x, y))
  elseif op == "**" then
    local x, y = tofloat(a), tofloat(b)
    if both_int and y >= 0 then
      local approx = x ^ y
      if a.t == "int" and b.t == "int" and approx == approx and math.abs(approx) < 2 ^ 62 then
        local r, base, e = 1, a.v, b.v
        while e > 0 do
          if e & 1 == 1 then r = r * base end
          e = e >> 1
          if e > 0 then base = base * base end
        end
        return int(r)
      end
      return { t = "big", v = approx }
    end
    if x == 0 and y < 0 then fail("0.0 cannot be raised to a negative power") end
    if x < 0 and y ~= math.floor(y) then
      fail("float() argument must be a string or a real number, not 'complex'")
    end
    local r = x ^ y
    if (r == math.huge or r == -math.huge) and x ~= math.huge and x ~= -math.huge then
      fail("(34, 'Numerical result out of range')")
    end
    return flt(r)
  end
  fail(SYNTAX)
end

local function unary(op, a)
  if a.t == "tuple" then fail("bad operand type for unary " .. op .. ": 'tuple'") end
  if op == "+" then return a end
  if a.t == "int" then
    if a.v == math.mininteger then return { t = "big", v = -(a.v + 0.0) } end
    return int(-a.v)
  end
  return { t = a.t, v = -a.v }
end

-- ------------------------------------------------------------------------
-- Parser (Python's grammar for these tokens)

local function parse(toks)
  local pos = 1
  local function peek() return toks[pos] and toks[pos].k end
  local function take() pos = pos + 1; return toks[pos - 1] end

  local expr

  local function primary()
    local k = peek()
    local v
    if k == "num" then
      v = number(take())
    elseif k == "(" then
      take()
      if peek() == ")" then
        take()
        v = TUPLE
      else
        v = expr()
        if peek() ~= ")" then fail(SYNTAX) end
        take()
      end
    else
      fail(SYNTAX)
    end
    -- `2(3)`: a call of an int (Python raises at run time).
    if peek() == "(" then
      if v.t == "tuple" then fail("'tuple' object is not callable") end
      fail("'" .. pytype(v) .. "' object is not callable")
    end
    return v
  end

  local factor

  local function power()
    local base = primary()
    if peek() == "**" then
      take()
      local e = factor()
      return binop("**", base, e)
    end
    return base
  end

  factor = function()
    local k = peek()
    if k == "+" or k == "-" then
      take()
      return unary(k, factor())
    end
    return power()
  end

  local function term()
    local v = factor()
    while peek() == "*" or peek() == "/" or peek() == "//" do
      local op = take().k
      v = binop(op, v, factor())
    end
    return v
  end

  expr = function()
    local v = term()
    while peek() == "+" or peek() == "-" do
      local op = take().k
      v = binop(op, v, term())
    end
    return v
  end

  local v = expr()
  if pos <= #toks then fail(SYNTAX) end
  return v
end

-- Python parses the whole expression before evaluating any of it: a syntax
-- error anywhere wins over a run-time error. So: parse to check, then evaluate.
local function syntax_only(toks)
  local pos = 1
  local function peek() return toks[pos] and toks[pos].k end
  local expr
  local function primary()
    local k = peek()
    if k == "num" then
      local s = toks[pos].s
      if not s:find(".", 1, true) and s:match("^0+[1-9]") then
        fail("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)")
      end
      pos = pos + 1
    elseif k == "(" then
      pos = pos + 1
      if peek() == ")" then pos = pos + 1 else
        expr()
        if peek() ~= ")" then fail(SYNTAX) end
        pos = pos + 1
      end
    else
      fail(SYNTAX)
    end
    if peek() == "(" then
      -- `2(3)` is valid syntax (a call): check the arguments' syntax too.
      pos = pos + 1
      if peek() ~= ")" then
        expr()
        if peek() ~= ")" then fail(SYNTAX) end
      end
      pos = pos + 1
      if peek() == "(" then return primary() end
    end
  end
  local factor
  local function power()
    primary()
    if peek() == "**" then pos = pos + 1; factor() end
  end
  factor = function()
    local k = peek()
    if k == "+" or k == "-" then pos = pos + 1; return factor() end
    power()
  end
  local function term()
    factor()
    while peek() == "*" or peek() == "/" or peek() == "//" do pos = pos + 1; factor() end
  end
  expr = function()
    term()
    while peek() == "+" or peek() == "-" do pos = pos + 1; term() end
  end
  expr()
  if pos <= #toks then fail(SYNTAX) end
end

--- Python's str() of a float.
local function py_str(x)
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  return J.float_repr(x)
end

--- τ-bench's calculate(expression): the text its tool returns.
function M.calculate(expression)
  if type(expression) ~= "string" or expression:find("[^0123456789+%-*/(). ]") then
    return "Error: invalid characters in expression"
  end
  local ok, result = pcall(function()
    local src = expression:gsub("^ +", "")
    local toks = tokenize(src)
    if #toks == 0 then fail("invalid syntax (<string>, line 0)") end
    check_brackets(toks)
    syntax_only(toks)
    local v = parse(toks)
    if v.t == "tuple" then fail("float() argument must be a string or a real number, not 'tuple'") end
    local f = tofloat(v)
    if v.t == "big" and (f == math.huge or f == -math.huge) then fail("int too large to convert to float") end
    if f ~= f or f == math.huge or f == -math.huge then return py_str(f) end
    return py_str(J.round(f, 2))
  end)
  if ok then return result end
  if type(result) == "table" and result.py then return "Error: " .. result.py end
  error(result, 0)
end

return M
