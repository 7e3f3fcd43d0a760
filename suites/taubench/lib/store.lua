-- τ-bench's records in SQLite: one row per record, its top-level fields as
-- columns (see make_fixtures.py), nested fields as JSON text in Python's
-- json.dumps format. A record read here is a Python-ordered object (see
-- pyjson); written back, its JSON fields are dumped again.

local evalua = require("evalua")
local J = require("lib.pyjson")

local M = {}

--- A table's layout: `{ name, key, cols = { { name, kind }, ... } }`;
--- kind is "text", "num", "json", or "key" (the dict key, not a field).
function M.table(name, key, cols)
  local t = { name = name, key = key, cols = {} }
  local names = {}
  for i, c in ipairs(cols) do
    t.cols[i] = { name = c[1], kind = c[2] }
    names[i] = c[1]
  end
  t.select = "SELECT " .. table.concat(names, ", ") .. " FROM " .. name
  return t
end

--- The record of `layout` whose key is `id`, as an ordered object (nil when absent).
function M.get(db, layout, id)
  local row = db:row(layout.select .. " WHERE " .. layout.key .. " = ?", id)
  if row == nil then return nil end
  return M.decode(layout, row)
end

--- A row as an ordered object.
function M.decode(layout, row)
  local o = J.object()
  for _, c in ipairs(layout.cols) do
    local v = row[c.name]
    if c.kind ~= "key" and v ~= nil then
      if c.kind == "json" then v = J.loads(v) end
      J.set(o, c.name, v)
    end
  end
  return o
end

--- json.dumps of a row's record, without decoding its JSON fields (they are
--- stored in json.dumps' format already).
function M.dumps_row(layout, row)
  local out = {}
  for _, c in ipairs(layout.cols) do
    local v = row[c.name]
    if c.kind ~= "key" and v ~= nil then
      local text
      if c.kind == "json" then
        text = v
      elseif type(v) == "number" then
        text = J.num(v)
      else
        text = J.encode_string(v)
      end
      out[#out + 1] = J.encode_string(c.name) .. ": " .. text
    end
  end
  return "{" .. table.concat(out, ", ") .. "}"
end

--- json.dumps of the record whose key is `id` (nil when absent).
function M.dumps(db, layout, id)
  local row = db:row(layout.select .. " WHERE " .. layout.key .. " = ?", id)
  if row == nil then return nil end
  return M.dumps_row(layout, row)
end

--- Whether a record with key `id` exists.
function M.has(db, layout, id)
  return db:one("SELECT 1 FROM " .. layout.name .. " WHERE " .. layout.key .. " = ?", id) ~= nil
end

local function column_value(c, v)
  if v == nil then return nil end
  if c.kind == "json" then return J.dumps(v) end
  return v
end

--- Write the record `o` (an ordered object) of key `id` back: every column
--- (a field it lacks is NULL). Its fields must be the layout's columns.
function M.put(db, layout, id, o)
  local sets, args = {}, {}
  for _, c in ipairs(layout.cols) do
    if c.kind ~= "key" and c.name ~= layout.key then
      sets[#sets + 1] = c.name .. " = ?"
      local v = column_value(c, o[c.name])
      args[#args + 1] = v == nil and evalua.null or v
    end
  end
  args[#args + 1] = id
  db:exec("UPDATE " .. layout.name .. " SET " .. table.concat(sets, ", ") .. " WHERE " .. layout.key .. " = ?",
    table.unpack(args))
end

--- Add the record `o` with key `id` (appended: τ-bench's dict order).
function M.insert(db, layout, id, o)
  local names, marks, args = {}, {}, {}
  for _, c in ipairs(layout.cols) do
    names[#names + 1] = c.name
    marks[#marks + 1] = "?"
    local v
    if c.kind == "key" then v = id else v = column_value(c, o[c.name]) end
    args[#args + 1] = v == nil and evalua.null or v
  end
  db:exec("INSERT INTO " .. layout.name .. " (" .. table.concat(names, ", ") .. ") VALUES ("
    .. table.concat(marks, ", ") .. ")", table.unpack(args))
end

--- Python's repr of a dict key in a KeyError message: 'x' (or "x" when it holds a quote).
function M.key_repr(k)
  if type(k) ~= "string" then return J.num(k) end
  if k:find("'", 1, true) and not k:find('"', 1, true) then return '"' .. k .. '"' end
  return "'" .. k:gsub("\\", "\\\\"):gsub("'", "\\'") .. "'"
end

--- Raise as τ-bench's tool would: the agent sees `Error: <message>` and nothing changes.
function M.raise(message)
  error(message, 0)
end

--- `d[k]` for a dict that must hold k (Python's KeyError otherwise).
function M.must(d, k)
  local v = d[k]
  if v == nil then M.raise(M.key_repr(k)) end
  return v
end

--- The record of `layout` whose key is `id`, which must exist (`data[...][id]`: KeyError otherwise).
function M.must_get(db, layout, id)
  local r = M.get(db, layout, id)
  if r == nil then M.raise(M.key_repr(id)) end
  return r
end

return M
