-- pydantic's EmailStr (email-validator 2.4, check_deliverability off) as the
-- travel suite's Email and CalendarEvent models apply it to their addresses:
-- the common syntax errors in email-validator's words, and the normalised
-- address (a display name dropped, spaces stripped, the domain lower-cased).
-- Not ported: quoted local parts, IDNA, length limits.
local D = require("lib.dojo")
local P = require("lib.travel_py")

local E = {}

local SPECIAL_USE = { "arpa", "invalid", "local", "localhost", "onion", "test" }

-- email-validator's safe_character_display for an ASCII character.
local function display(c)
  if c == "\\" then return '"\\"' end
  if c == " " then return "SPACE" end
  local b = c:byte()
  if b < 32 or b == 127 then return string.format("U+%04X", b) end
  return P.repr(c)
end

local function bad_chars(s, allowed)
  local seen, out = {}, {}
  for c in s:gmatch(".") do
    if c:byte() < 128 and not c:match(allowed) and not seen[c] then
      seen[c] = true
      out[#out + 1] = display(c)
    end
  end
  table.sort(out)
  return out
end

-- check_dot_atom: the period (and, in a domain, hyphen) rules.
local function dot_atom(label, start_descr, end_descr, hostname)
  if label:sub(-1) == "." then return end_descr:format("period") end
  if label:sub(1, 1) == "." then return start_descr:format("period") end
  if label:find("..", 1, true) then return "An email address cannot have two periods in a row." end
  if hostname then
    if label:sub(-1) == "-" then return end_descr:format("hyphen") end
    if label:sub(1, 1) == "-" then return start_descr:format("hyphen") end
    if label:find(".-", 1, true) or label:find("-.", 1, true) then
      return "An email address cannot have a period and a hyphen next to each other."
    end
  end
end

local function local_part_error(l)
  if l == "" then return "There must be something before the @-sign." end
  local bad = bad_chars(l, "[%w_!#%$%%&'%*%+%-/=%?%^`{|}~%.]")
  if #bad > 0 then
    return "The email address contains invalid characters before the @-sign: " .. table.concat(bad, ", ") .. "."
  end
  return dot_atom(l, "An email address cannot start with a %s.",
    "An email address cannot have a %s immediately before the @-sign.", false)
end

local function domain_error(d)
  if d == "" then return "There must be something after the @-sign." end
  local bad = bad_chars(d, "[%w%-%.]")
  if #bad > 0 then
    return "The part after the @-sign contains invalid characters: " .. table.concat(bad, ", ") .. "."
  end
  local err = dot_atom(d, "An email address cannot have a %s immediately after the @-sign.",
    "An email address cannot end with a %s.", true)
  if err then return err end
  if not d:find(".", 1, true) then return "The part after the @-sign is not valid. It should have a period." end
  if not d:sub(-1):match("%a") then
    return "The part after the @-sign is not valid. It is not within a valid top-level domain."
  end
  for _, s in ipairs(SPECIAL_USE) do
    if d == s or d:sub(-(#s + 1)) == "." .. s then
      return "The part after the @-sign is a special-use or reserved name that cannot be used with email."
    end
  end
end

--- The normalised address, or nil and why it is not one.
function E.normalize(v)
  if type(v) ~= "string" then return nil, nil end
  if v:find("[\r\n]") then return nil, "Carriage return and line feed characters are not allowed" end
  local inner = v:match("^%s*[^<>]-%s*<(.+)>%s*$")
  local email = (inner or v):match("^%s*(.-)%s*$")
  local at = email:find("@", 1, true)
  if not at then return nil, "An email address must have an @-sign." end
  local l, d = email:sub(1, at - 1), email:sub(at + 1)
  if l:match('^".*"$') then return nil, "Quoting the part before the @-sign is not allowed here." end
  local err = local_part_error(l)
  if err then return nil, err end
  if d:match("^%[.*%]$") then return nil, "A bracketed IP address after the @-sign is not allowed here." end
  d = d:lower()
  err = domain_error(d)
  if err then return nil, err end
  return l .. "@" .. d
end

--- Validate the address lists `fields` ({ name, list } pairs, in the model's
--- field order) of pydantic model `model`: each list normalised in place, or
--- one ValidationError naming every bad address, as pydantic reports them.
function E.validate(model, fields)
  local errors = {}
  for _, f in ipairs(fields) do
    local name, list = f[1], f[2]
    for i, v in ipairs(list) do
      local ok, why = E.normalize(v)
      if ok then
        list[i] = ok
      elseif why then
        errors[#errors + 1] = name .. "." .. (i - 1) .. "\n  value is not a valid email address: " .. why
          .. " [type=value_error, input_value=" .. P.input_value(v) .. ", input_type=str]"
      end
    end
  end
  if #errors == 0 then return end
  local head = #errors == 1 and "1 validation error" or (#errors .. " validation errors")
  D.raise("ValidationError", head .. " for " .. model .. "\n" .. table.concat(errors, "\n"))
end

return E
