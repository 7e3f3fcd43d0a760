-- difflib.SequenceMatcher and DeepDiff (deepdiff 9.2.1, as AgentDojo 0.1.35's
-- WorkspaceDeepDiff calls it: exclude_paths, every other option at its default)
-- on the dumped environment (MIT: ../LICENSE). The models are JSON objects
-- here: which objects are dicts (keyed by id) and which are pydantic models
-- (compared attribute by attribute) is known from the field that holds them.
local D = require("lib.dojo")
local P = require("lib.workspace_py")

local M = {}

-- difflib.SequenceMatcher(None, a, b, autojunk) ---------------------------------

local function chain_b(b, autojunk)
  local b2j = {}
  for j, elt in ipairs(b) do
    local idxs = b2j[elt]
    if idxs == nil then idxs = {}; b2j[elt] = idxs end
    idxs[#idxs + 1] = j - 1
  end
  local n = #b
  if autojunk and n >= 200 then
    local ntest = n // 100 + 1
    local popular = {}
    for elt, idxs in pairs(b2j) do
      if #idxs > ntest then popular[#popular + 1] = elt end
    end
    for _, elt in ipairs(popular) do b2j[elt] = nil end
  end
  return b2j
end

-- find_longest_match(alo, ahi, blo, bhi), 0-based as in Python (no junk function).
local function longest(a, b, b2j, alo, ahi, blo, bhi)
  local besti, bestj, bestsize = alo, blo, 0
  local j2len = {}
  for i = alo, ahi - 1 do
    local newj2len = {}
    for _, j in ipairs(b2j[a[i + 1]] or {}) do
      if j >= blo then
        if j >= bhi then break end
        local k = (j2len[j - 1] or 0) + 1
        newj2len[j] = k
        if k > bestsize then besti, bestj, bestsize = i - k + 1, j - k + 1, k end
      end
    end
    j2len = newj2len
  end
  while besti > alo and bestj > blo and a[besti] == b[bestj] do
    besti, bestj, bestsize = besti - 1, bestj - 1, bestsize + 1
  end
  while besti + bestsize < ahi and bestj + bestsize < bhi and a[besti + bestsize + 1] == b[bestj + bestsize + 1] do
    bestsize = bestsize + 1
  end
  return besti, bestj, bestsize
end

local function matching_blocks(a, b, autojunk)
  local b2j = chain_b(b, autojunk)
  local la, lb = #a, #b
  local queue = { { 0, la, 0, lb } }
  local blocks = {}
  while #queue > 0 do
    local q = table.remove(queue)
    local alo, ahi, blo, bhi = q[1], q[2], q[3], q[4]
    local i, j, k = longest(a, b, b2j, alo, ahi, blo, bhi)
    if k > 0 then
      blocks[#blocks + 1] = { i, j, k }
      if alo < i and blo < j then queue[#queue + 1] = { alo, i, blo, j } end
      if i + k < ahi and j + k < bhi then queue[#queue + 1] = { i + k, ahi, j + k, bhi } end
    end
  end
  table.sort(blocks, function(x, y)
    if x[1] ~= y[1] then return x[1] < y[1] end
    if x[2] ~= y[2] then return x[2] < y[2] end
    return x[3] < y[3]
  end)
  local i1, j1, k1 = 0, 0, 0
  local out = {}
  for _, blk in ipairs(blocks) do
    local i2, j2, k2 = blk[1], blk[2], blk[3]
    if i1 + k1 == i2 and j1 + k1 == j2 then
      k1 = k1 + k2
    else
      if k1 > 0 then out[#out + 1] = { i1, j1, k1 } end
      i1, j1, k1 = i2, j2, k2
    end
  end
  if k1 > 0 then out[#out + 1] = { i1, j1, k1 } end
  out[#out + 1] = { la, lb, 0 }
  return out
end

--- SequenceMatcher(None, a, b, autojunk).get_opcodes(): { tag, i1, i2, j1, j2 } (0-based).
function M.opcodes(a, b, autojunk)
  local i, j = 0, 0
  local answer = {}
  for _, blk in ipairs(matching_blocks(a, b, autojunk)) do
    local ai, bj, size = blk[1], blk[2], blk[3]
    local tag = ""
    if i < ai and j < bj then tag = "replace" elseif i < ai then tag = "delete" elseif j < bj then tag = "insert" end
    if tag ~= "" then answer[#answer + 1] = { tag, i, ai, j, bj } end
    i, j = ai + size, bj + size
    if size > 0 then answer[#answer + 1] = { "equal", ai, i, bj, j } end
  end
  return answer
end

--- difflib.SequenceMatcher(None, a, b).ratio() of two texts (autojunk on).
function M.ratio(a, b)
  local x, y = P.chars(a), P.chars(b)
  local matches = 0
  for _, blk in ipairs(matching_blocks(x, y, true)) do matches = matches + blk[3] end
  if #x + #y == 0 then return 1.0 end
  return 2.0 * matches / (#x + #y)
end

-- DeepDiff ---------------------------------------------------------------------

local EXCLUDE = {
  ["root.inbox.sent"] = true, ["root.inbox.received"] = true, ["root.inbox.drafts"] = true,
  ["root.responses"] = true, ["root.model_fields_set"] = true,
  ["root.calendar.initial_events"] = true, ["root.inbox.initial_emails"] = true,
  ["root.cloud_drive.initial_files"] = true,
}

-- The fields whose value is a dict (keyed by id or address); every other JSON
-- object is a pydantic model.
local DICT_FIELDS = { emails = true, trash = true, events = true, files = true, shared_with = true }

local THRESHOLD_TO_DIFF_DEEPER = 0.33

local function is_list(v)
  return type(v) == "table" and (v[1] ~= nil or getmetatable(v) ~= nil and next(v) == nil)
end

-- Python's type of a value at this place ("dict" for both dicts and models: the
-- place tells which).
local function kind(v)
  if D.none(v) then return "none" end
  local t = type(v)
  if t == "table" then return is_list(v) and "list" or "dict" end
  if t == "number" then return math.type(v) end
  return t
end

local function key_repr(k)
  if type(k) == "number" then return "[" .. k .. "]" end
  if k:find("'", 1, true) then return '["' .. k .. '"]' end
  return "['" .. k .. "']"
end

local function new_tree()
  return { n = 0, items = {} }
end

-- A report: { type, path, t1, t2 } in a tree (a list, counted as TreeResult's len).
local function report(tree, rtype, path, t1, t2)
  if EXCLUDE[path] then return end
  tree.n = tree.n + 1
  tree.items[#tree.items + 1] = { type = rtype, path = path, t1 = t1, t2 = t2 }
end

local diff

local function diff_dict(tree, path, t1, t2, as_model)
  local added_type = as_model and "attribute_added" or "dictionary_item_added"
  local removed_type = as_model and "attribute_removed" or "dictionary_item_removed"
  local child = function(k) return as_model and (path .. "." .. k) or (path .. key_repr(k)) end
  local added, removed, both = {}, {}, {}
  for _, k in ipairs(P.numeric_keys(t2)) do
    -- A model has every field: one missing here is a JSON null read back (None).
    if t1[k] == nil and not as_model then added[#added + 1] = k else both[#both + 1] = k end
  end
  for _, k in ipairs(P.numeric_keys(t1)) do
    if t2[k] == nil then
      if as_model then both[#both + 1] = k else removed[#removed + 1] = k end
    end
  end
  local union = #added + #removed + #both
  if not as_model and union > 1 and #both / union < THRESHOLD_TO_DIFF_DEEPER then
    report(tree, "values_changed", path, t1, t2)
    return
  end
  for _, k in ipairs(added) do report(tree, added_type, child(k), nil, t2[k]) end
  for _, k in ipairs(removed) do report(tree, removed_type, child(k), t1[k], nil) end
  for _, k in ipairs(both) do
    diff(tree, child(k), t1[k], t2[k], as_model and DICT_FIELDS[k] and "dict" or "model")
  end
end

-- Pairs compared one by one (zip_longest over the two ranges).
local function diff_pairs(tree, path, l1, l2, f1, t1, f2, t2)
  local n = math.max(t1 - f1, t2 - f2)
  for k = 0, n - 1 do
    local i, j = f1 + k, f2 + k
    local has_x, has_y = i < t1, j < t2
    if not has_y then
      report(tree, "iterable_item_removed", path .. "[" .. i .. "]", l1[i + 1], nil)
    elseif not has_x then
      report(tree, "iterable_item_added", path .. "[" .. j .. "]", nil, l2[j + 1])
    else
      diff(tree, path .. "[" .. i .. "]", l1[i + 1], l2[j + 1], "model")
    end
  end
end

local function all_basic(l)
  for _, v in ipairs(l) do
    if type(v) == "table" then return false end
  end
  return true
end

local function diff_by_difflib(tree, path, l1, l2)
  for _, op in ipairs(M.opcodes(l1, l2, false)) do
    local tag, i1, i2, j1, j2 = op[1], op[2], op[3], op[4], op[5]
    if tag == "equal" then
      for k = 0, i2 - i1 - 1 do
        local x, y = l1[i1 + k + 1], l2[j1 + k + 1]
        if kind(x) ~= kind(y) then diff(tree, path .. "[" .. (i1 + k) .. "]", x, y, "model") end
      end
    elseif tag == "replace" then
      diff_pairs(tree, path, l1, l2, i1, i2, j1, j2)
    elseif tag == "delete" then
      for k = i1, i2 - 1 do report(tree, "iterable_item_removed", path .. "[" .. k .. "]", l1[k + 1], nil) end
    else
      for k = j1, j2 - 1 do report(tree, "iterable_item_added", path .. "[" .. k .. "]", nil, l2[k + 1]) end
    end
  end
end

local function merge(into, from)
  for _, it in ipairs(from.items) do
    into.n = into.n + 1
    into.items[#into.items + 1] = it
  end
end

local function diff_list(tree, path, l1, l2)
  if all_basic(l1) and all_basic(l2) then
    local pass = new_tree()
    diff_by_difflib(pass, path, l1, l2)
    if pass.n > 1 then
      local pass2 = new_tree()
      diff_pairs(pass2, path, l1, l2, 0, #l1, 0, #l2)
      if pass.n >= pass2.n then pass = pass2 end
    end
    merge(tree, pass)
  else
    diff_pairs(tree, path, l1, l2, 0, #l1, 0, #l2)
  end
end

-- DeepDiff._diff on one level; `place` says whether an object here is a dict or a model.
diff = function(tree, path, t1, t2, place)
  if EXCLUDE[path] then return end
  -- The very same table (post shares pre's value where no tool wrote): no difference.
  if type(t1) == "table" and rawequal(t1, t2) then return end
  local k1, k2 = kind(t1), kind(t2)
  if k1 ~= k2 then
    report(tree, "type_changes", path, t1, t2)
    return
  end
  if k1 == "dict" then
    diff_dict(tree, path, t1, t2, place ~= "dict")
  elseif k1 == "list" then
    diff_list(tree, path, t1, t2)
  elseif k1 ~= "none" and t1 ~= t2 then
    report(tree, "values_changed", path, t1, t2)
  end
end

--- DeepDiff(pre, post, exclude_paths=...) on the environment's models, as its
--- text view: { [report type] = { [path] = value } } with only the non-empty
--- types, iterable items both added and removed at a path made values_changed.
function M.deepdiff(pre, post)
  local tree = new_tree()
  for _, top in ipairs({ "inbox", "calendar", "cloud_drive" }) do
    diff(tree, "root." .. top, pre[top], post[top], "model")
  end
  local added, removed = {}, {}
  for _, it in ipairs(tree.items) do
    if it.type == "iterable_item_added" then added[it.path] = it end
    if it.type == "iterable_item_removed" then removed[it.path] = it end
  end
  local out = {}
  for _, it in ipairs(tree.items) do
    local rtype, value = it.type, it.t2
    if rtype == "iterable_item_removed" or rtype == "dictionary_item_removed" or rtype == "attribute_removed" then
      value = it.t1
    end
    if (rtype == "iterable_item_added" and removed[it.path]) or (rtype == "iterable_item_removed" and added[it.path]) then
      rtype, value = "values_changed", added[it.path].t2
    end
    out[rtype] = out[rtype] or {}
    out[rtype][it.path] = value == nil and D.null or value
  end
  return out
end

--- set(diff.keys())
function M.keys(diff)
  local s = {}
  for k in pairs(diff) do s[k] = true end
  return s
end

--- set(diff[rtype]) (its paths)
function M.paths(diff, rtype)
  local s = {}
  for path in pairs(diff[rtype] or {}) do s[path] = true end
  return s
end

--- pydantic's pre_environment == post_environment (every field but the
--- computed ones; the initial_* lists hold the same objects as the dicts).
function M.env_equal(pre, post)
  local computed = { received = true, sent = true, drafts = true }
  for _, top in ipairs({ "inbox", "calendar", "cloud_drive" }) do
    local a, b = pre[top], post[top]
    for k, v in pairs(rawequal(a, b) and {} or a) do
      if not computed[k] and not P.equal(v, b[k]) then return false end
    end
    for k in pairs(b) do
      if not computed[k] and a[k] == nil then return false end
    end
  end
  return true
end

return M
