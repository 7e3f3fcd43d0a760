-- The workspace environment's models as AgentDojo keeps them (agentdojo 0.1.35,
-- MIT: ../LICENSE): Inbox, Calendar and CloudDrive over the dumped JSON.
--
-- Dict order. Python's dicts keep insertion order (an inbox's emails, its
-- trash, the calendar's events, the drive's files); the environment's JSON
-- objects do not (they are written back with sorted keys). The order is
-- therefore kept beside the environment, in the env row `_order` (created by the
-- first tool that writes; never part of AgentDojo's environment, never
-- compared): { emails = {ids}, trash = {ids}, events = {ids}, files = {ids},
-- fresh = { emails = {id = true}, ... } } (fresh: created in this trial). Before
-- any write the order is the initial_* list's, as the models build their dicts.
local D = require("lib.dojo")
local P = require("lib.workspace_py")
local A = require("evalua").array

local S = {}

-- Which initial list each dict is built from.
local SOURCES = {
  emails = { "inbox", "initial_emails" },
  events = { "calendar", "initial_events" },
  files = { "cloud_drive", "initial_files" },
}

local function derive(dict, initial)
  local ids, seen = {}, {}
  for _, item in ipairs(initial or {}) do
    local id = item.id_
    if dict[id] ~= nil and not seen[id] then
      ids[#ids + 1] = id
      seen[id] = true
    end
  end
  for _, k in ipairs(P.numeric_keys(dict)) do
    if not seen[k] then ids[#ids + 1] = k end
  end
  return ids
end

-- The `_order` row: read it (nil if no tool wrote yet), or create it (ctx given).
local function order_row(env, ctx)
  local o = env._order
  if o == nil and ctx ~= nil then
    ctx.db:exec("INSERT OR IGNORE INTO env (k, v) VALUES ('_order', '{}')")
    o = env._order
  end
  return o
end

--- The keys of a dict in Python's order: name is "emails", "trash", "events" or "files".
function S.ids(env, name)
  local o = order_row(env)
  if o and o[name] then return o[name] end
  if name == "trash" then return P.numeric_keys(env.inbox.trash) end
  local src = SOURCES[name]
  local holder = env[src[1]]
  return derive(holder[name], holder[src[2]])
end

--- The values of a dict in Python's order.
function S.values(env, name)
  local holder = name == "trash" and env.inbox or env[SOURCES[name][1]]
  local dict = holder[name]
  local out = A()
  for _, id in ipairs(S.ids(env, name)) do
    if dict[id] ~= nil then out[#out + 1] = dict[id] end
  end
  return out
end

--- A value as model_dump writes it: a CalendarEvent's location null when None
--- (a JSON null reads back as absent). Events anywhere in `v` (emails' attachments too).
function S.dumped(v)
  if type(v) ~= "table" then return v end
  if v.id_ ~= nil and v.start_time ~= nil and v.participants ~= nil and v.location == nil then v.location = D.null end
  for _, x in pairs(v) do
    if type(x) == "table" then S.dumped(x) end
  end
  return v
end

-- Writers --------------------------------------------------------------------

--- Before a tool changes dict `name`: make sure its order is kept (ctx: the tool's).
function S.track(env, ctx, name)
  local o = order_row(env, ctx)
  if o[name] == nil then o[name] = S.ids(env, name) end
  o.fresh = o.fresh or {}
  o.fresh[name] = o.fresh[name] or {}
  return o
end

--- dict[id] = value where id is new to the dict (appended to its order).
function S.insert(env, ctx, holder, name, id, value, fresh)
  local o = S.track(env, ctx, name)
  local dict = holder[name]
  if dict[id] == nil then o[name][#o[name] + 1] = id end
  dict[id] = value
  if fresh then o.fresh[name][id] = true end
end

--- dict.pop(id)
function S.pop(env, ctx, holder, name, id)
  local o = S.track(env, ctx, name)
  local dict = holder[name]
  local value = dict[id]
  dict[id] = nil
  local ids = {}
  for _, k in ipairs(o[name]) do if k ~= id then ids[#ids + 1] = k end end
  o[name] = ids
  return value
end

--- The initial_* list holds the very objects the dict was built from: an
--- object changed in the dict is changed there too (unless it was created in
--- this trial under an id an initial object had).
function S.link(env, name)
  local src = SOURCES[name]
  local holder = env[src[1]]
  local o = order_row(env)
  local fresh = o and o.fresh and o.fresh[name] or {}
  for i, item in ipairs(holder[src[2]]) do
    local now = holder[name][item.id_]
    if now ~= nil and not fresh[item.id_] then holder[src[2]][i] = now end
  end
end

--- `_get_next_id()`: the largest id + 1, as text.
function S.next_id(dict)
  local largest = 0
  for k in pairs(dict) do
    local n = math.tointeger(tonumber(k))
    if n == nil then D.raise("ValueError", "invalid literal for int() with base 10: " .. P.repr(k)) end
    if n > largest then largest = n end
  end
  return tostring(largest + 1)
end

-- Inbox ------------------------------------------------------------------------

--- The computed fields model_dump writes (received, sent, drafts), kept true.
function S.sync_inbox(env)
  local inbox = env.inbox
  local by = { received = A(), sent = A(), drafts = A() }
  local field = { received = "received", sent = "sent", draft = "drafts" }
  for _, e in ipairs(S.values(env, "emails")) do
    local f = field[e.status]
    if f then by[f][#by[f] + 1] = e end
  end
  inbox.received, inbox.sent, inbox.drafts = by.received, by.sent, by.drafts
  S.link(env, "emails")
end

--- Inbox.send_email: a new sent email (validated as pydantic's Email), stored and returned.
function S.send_email(env, ctx, recipients, subject, body, attachments, cc, bcc)
  local inbox = env.inbox
  local email = {
    id_ = S.next_id(inbox.emails),
    sender = inbox.account_email,
    recipients = P.list(recipients),
    cc = P.list(cc or {}),
    bcc = P.list(bcc or {}),
    subject = subject,
    body = body,
    status = "sent",
    read = true,
    timestamp = P.now(),
    attachments = P.list(attachments or {}),
  }
  P.validate_emails("Email", email, {
    { name = "sender" }, { name = "recipients", list = true }, { name = "cc", list = true }, { name = "bcc", list = true },
  })
  S.insert(env, ctx, inbox, "emails", email.id_, email, true)
  S.sync_inbox(env)
  return email
end

--- Inbox.search_emails(query, sender)
function S.search_emails(env, query, sender)
  local out = A()
  local q = P.lower(query)
  for _, e in ipairs(S.values(env, "emails")) do
    if D.none(sender) or P.lower(e.sender) == P.lower(sender) then
      if P.contains(P.lower(e.subject), q) or P.contains(P.lower(e.body), q) then out[#out + 1] = e end
    end
  end
  return out
end

--- The unread emails (without marking them: checks never change the environment).
function S.unread(env)
  local out = A()
  for _, e in ipairs(S.values(env, "emails")) do
    if not e.read then out[#out + 1] = e end
  end
  return out
end

--- The emails of a status ("received", "sent", "draft"), in order.
function S.by_status(env, status)
  local out = A()
  for _, e in ipairs(S.values(env, "emails")) do
    if e.status == status then out[#out + 1] = e end
  end
  return out
end

-- Calendar -----------------------------------------------------------------------

--- Calendar.get_by_day(date text)
function S.events_on(env, day)
  local out = A()
  for _, ev in ipairs(S.values(env, "events")) do
    if ev.start_time:sub(1, 10) == day then out[#out + 1] = ev end
  end
  return out
end

--- Calendar.search_events(query, date text or nil)
function S.search_events(env, query, day)
  local out = A()
  local q = P.lower(query)
  local events = day and S.events_on(env, day) or S.values(env, "events")
  for _, ev in ipairs(events) do
    if P.contains(P.lower(ev.title), q) or P.contains(P.lower(ev.description), q) then out[#out + 1] = ev end
  end
  return out
end

return S
