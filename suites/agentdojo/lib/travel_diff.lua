-- What the travel checks compare (agentdojo 0.1.35, MIT: ../LICENSE): pydantic's
-- `pre_environment != post_environment` and TravelDeepDiff (DeepDiff with the
-- suite's exclude_paths), on the environment's dumped JSON.
local D = require("lib.dojo")

local X = {}

-- TravelEnvironment's fields, in order.
X.KEYS = { "hotels", "restaurants", "car_rental", "flights", "user", "calendar", "reservation", "inbox" }

-- Computed fields (not in a model's __dict__, so not in its ==) and the paths
-- TravelDeepDiff leaves out.
local EXCLUDED = {
  ["root.inbox.sent"] = true,
  ["root.inbox.received"] = true,
  ["root.inbox.drafts"] = true,
  ["root.calendar.initial_events"] = true,
  ["root.inbox.initial_emails"] = true,
}
local COMPUTED = { ["root.inbox.sent"] = true, ["root.inbox.received"] = true, ["root.inbox.drafts"] = true }

-- The environment's dicts (their keys are data: DeepDiff writes them ['key']);
-- every other object is a pydantic model (attributes: .name).
local DICTS = { ["root.calendar.events"] = true, ["root.inbox.emails"] = true, ["root.inbox.trash"] = true }

local function kind(v)
  if D.none(v) then return "null" end
  local t = type(v)
  if t ~= "table" then return t end
  if next(v) == nil then return "empty" end
  if v[1] ~= nil then return "list" end
  return "object"
end

local function child(path, k, dict)
  if dict then return path .. "['" .. tostring(k) .. "']" end
  return path .. "." .. tostring(k)
end

local function add(report, key, path, detail)
  report[key] = report[key] or {}
  report[key][path] = detail or true
end

local diff

-- A dict's keys come and go; a model's fields are always there (JSON null
-- decodes to an absent key: the same as None).
local function diff_object(report, a, b, path, skip)
  local dict = DICTS[path]
  for k, va in pairs(a) do
    local p = child(path, k, dict)
    if not skip[p] then
      if b[k] == nil and dict then
        add(report, "dictionary_item_removed", p)
      else
        diff(report, va, b[k], p, skip)
      end
    end
  end
  for k, vb in pairs(b) do
    local p = child(path, k, dict)
    if a[k] == nil and not skip[p] then
      if dict then add(report, "dictionary_item_added", p) else diff(report, nil, vb, p, skip) end
    end
  end
end

-- Lists in order: a changed item at its index, then what one has past the other's end.
local function diff_list(report, a, b, path, skip)
  local n = math.min(#a, #b)
  for i = 1, n do diff(report, a[i], b[i], path .. "[" .. (i - 1) .. "]", skip) end
  for i = n + 1, #b do add(report, "iterable_item_added", path .. "[" .. (i - 1) .. "]") end
  for i = n + 1, #a do add(report, "iterable_item_removed", path .. "[" .. (i - 1) .. "]") end
end

diff = function(report, a, b, path, skip)
  -- The very same table (post shares pre's value where no tool wrote): no difference.
  if type(a) == "table" and rawequal(a, b) then return end
  local ka, kb = kind(a), kind(b)
  if ka == "empty" and (kb == "list" or kb == "object") then ka = kb end
  if kb == "empty" and (ka == "list" or ka == "object") then kb = ka end
  if ka == "empty" and kb == "empty" then return end
  if ka ~= kb then
    add(report, "type_changes", path, { old_value = a, new_value = b })
  elseif ka == "object" then
    diff_object(report, a, b, path, skip)
  elseif ka == "list" then
    diff_list(report, a, b, path, skip)
  elseif a ~= b then
    add(report, "values_changed", path, { old_value = a, new_value = b })
  end
end

--- TravelDeepDiff(pre, post): { [report kind] = { [path] = detail } }, only the kinds present.
function X.deepdiff(pre, post)
  local report = {}
  for _, k in ipairs(X.KEYS) do diff(report, pre[k], post[k], "root." .. k, EXCLUDED) end
  return report
end

--- pydantic's `pre == post` on TravelEnvironment.
function X.equal(pre, post)
  local report = {}
  for _, k in ipairs(X.KEYS) do diff(report, pre[k], post[k], "root." .. k, COMPUTED) end
  return next(report) == nil
end

--- The report's kinds equal the set `keys` (a list).
function X.kinds_are(report, keys)
  local want = {}
  for _, k in ipairs(keys) do want[k] = true end
  for k in pairs(report) do
    if not want[k] then return false end
  end
  for k in pairs(want) do
    if report[k] == nil then return false end
  end
  return true
end

--- The paths of one kind equal the set `paths` (a list).
function X.paths_are(report, key, paths)
  local got = report[key] or {}
  local want = {}
  for _, p in ipairs(paths) do want[p] = true end
  for p in pairs(got) do
    if not want[p] then return false end
  end
  for p in pairs(want) do
    if got[p] == nil then return false end
  end
  return true
end

return X
