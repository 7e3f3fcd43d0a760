-- AgentDojo's calendar and email tools as the travel suite offers them
-- (agentdojo 0.1.35, default_suites/v1/tools/calendar_client.py and
-- email_client.py; MIT: ../LICENSE), ported.
local D = require("lib.dojo")
local P = require("lib.travel_py")
local EmailStr = require("lib.travel_emailstr")

local T = {}

-- Inbox's computed fields (received, sent, drafts), as model_dump writes them.
local function recompute(inbox)
  local by = { received = {}, sent = {}, draft = {} }
  for _, e in ipairs(P.values(inbox.emails)) do
    local l = by[e.status]
    if l then l[#l + 1] = e end
  end
  inbox.received, inbox.sent, inbox.drafts = P.list(by.received), P.list(by.sent), P.list(by.draft)
end

local function copy_list(t)
  local out = {}
  for i, v in ipairs(t or {}) do out[i] = v end
  return out
end

-- Inbox.send_email: a sent email, read, stamped with the trial's clock.
local function send(ctx, inbox, recipients, subject, body, attachments, cc, bcc)
  local id = P.next_id(inbox.emails)
  recipients, cc, bcc = copy_list(recipients), copy_list(cc), copy_list(bcc)
  EmailStr.validate("Email", { { "recipients", recipients }, { "cc", cc }, { "bcc", bcc } })
  local email = {
    id_ = id,
    sender = inbox.account_email,
    recipients = P.list(recipients),
    cc = P.list(cc),
    bcc = P.list(bcc),
    subject = subject,
    body = body,
    status = "sent",
    read = true,
    timestamp = (ctx and ctx.now and ctx.now() or "2024-05-15T00:00:00Z"):gsub("Z$", ""),
    attachments = P.list(copy_list(attachments)),
  }
  inbox.emails[id] = email
  recompute(inbox)
  return email
end

-- A CalendarEvent as model_dump writes it: its location null when None (JSON
-- null reads back as an absent field).
local function event_out(ev)
  if ev.location == nil then ev.location = D.null end
  return ev
end

-- CalendarEvent's required fields (location too, but a JSON null reads as absent: taken as None).
local EVENT_FIELDS = { "id_", "title", "description", "start_time", "end_time", "participants" }

-- An attachment as send_email parses it: a file id, or CalendarEvent(**event_details).
local function attachment_of(a)
  if type(a) ~= "table" or a[1] ~= nil then D.raise("ValueError", "Attachments must be dictionaries.") end
  if a.type == nil then D.raise("ValueError", "Attachment must have a 'type' field.") end
  if a.type == "file" or a.file_id ~= nil then
    if a.file_id == nil then D.raise("ValueError", "Attachment of type 'file' must have a 'file_id' field.") end
    return tostring(a.file_id)
  end
  local ev = a.event_details
  if ev == nil then D.raise("ValueError", "Attachment of type 'event' must have an 'event_details' field.") end
  for _, f in ipairs(EVENT_FIELDS) do
    if ev[f] == nil then
      D.raise("ValidationError", "1 validation error for CalendarEvent\n" .. f .. "\n  Field required")
    end
  end
  local participants = copy_list(ev.participants)
  EmailStr.validate("CalendarEvent", { { "participants", participants } })
  return {
    id_ = ev.id_, title = ev.title, description = ev.description,
    start_time = P.iso(P.fromisoformat(ev.start_time)), end_time = P.iso(P.fromisoformat(ev.end_time)),
    location = D.none(ev.location) and D.null or ev.location, participants = P.list(participants),
    all_day = ev.all_day == true, status = ev.status or "confirmed",
  }
end

T.send_email = {
  writes = true,
  run = function(env, args, ctx)
    local parsed = nil
    if not D.none(args.attachments) then
      parsed = {}
      for i, a in ipairs(args.attachments) do parsed[i] = attachment_of(a) end
    end
    local cc = not D.none(args.cc) and args.cc or nil
    local bcc = not D.none(args.bcc) and args.bcc or nil
    return send(ctx, env.inbox, P.list_arg(args, "recipients"), args.subject, args.body, parsed, cc, bcc)
  end,
}

-- `list(set(participants))`: Python's set order is its hash order; this keeps the first of each.
local function unique(list)
  local seen, out = {}, {}
  for _, v in ipairs(list) do
    if not seen[v] then
      seen[v] = true
      out[#out + 1] = v
    end
  end
  return out
end

T.create_calendar_event = {
  writes = true,
  run = function(env, args, ctx)
    local s = P.strptime(args.start_time, true)
    local e = P.strptime(args.end_time, true)
    local participants = D.none(args.participants) and {} or copy_list(args.participants)
    local calendar = env.calendar
    local id = P.next_id(calendar.events)
    -- Calendar.create_event appends the owner to the caller's list, which the invitation then goes to.
    participants[#participants + 1] = calendar.account_email
    local location = args.location
    if location == nil then location = D.null end
    local event_participants = unique(participants)
    EmailStr.validate("CalendarEvent", { { "participants", event_participants } })
    local event = {
      id_ = id, title = args.title, description = args.description or "",
      start_time = P.iso(s), end_time = P.iso(e), location = location,
      participants = P.list(event_participants), all_day = false, status = "confirmed",
    }
    calendar.events[id] = event
    send(ctx, env.inbox, participants, "Invitation: " .. tostring(args.title), event.description, { event })
    return event
  end,
}

local function search(calendar, query, day)
  local q = P.lower(tostring(query))
  local out = {}
  for _, ev in ipairs(P.values(calendar.events)) do
    if (day == nil or P.date_of(ev.start_time) == day)
      and (P.has(P.lower(ev.title), q) or P.has(P.lower(ev.description), q)) then
      out[#out + 1] = event_out(ev)
    end
  end
  return out
end

local function day_text(t) return string.format("%04d-%02d-%02d", t.year, t.month, t.day) end

T.search_calendar_events = {
  run = function(env, args)
    local day = nil
    if not D.none(args.date) then day = day_text(P.strptime(args.date, false)) end
    local matches = search(env.calendar, args.query, day)
    if #matches == 0 then D.raise("ValueError", "No events found. Try with a different query.") end
    return matches
  end,
}

T.get_day_calendar_events = {
  run = function(env, args)
    local day = day_text(P.strptime(args.day, false))
    local out = {}
    for _, ev in ipairs(P.values(env.calendar.events)) do
      if P.date_of(ev.start_time) == day then out[#out + 1] = event_out(ev) end
    end
    return P.list(out)
  end,
}

local function same(a, b)
  if D.none(a) and D.none(b) then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do
    if not same(v, b[k]) then return false end
  end
  for k, v in pairs(b) do
    if a[k] == nil and not D.none(v) then return false end
  end
  return true
end

-- In Python an invitation's attachment is the calendar's own event object, so
-- cancelling the event shows in it: the attachments equal to the event follow it.
local function cancel_attached(inbox, ev)
  for _, email in pairs(inbox.emails) do
    for _, a in ipairs(email.attachments or {}) do
      if type(a) == "table" and same(a, ev) then a.status = "canceled" end
    end
  end
end

T.cancel_calendar_event = {
  writes = true,
  run = function(env, args, ctx)
    local id = tostring(args.event_id)
    local ev = env.calendar.events[id]
    if ev == nil then D.raise("ValueError", "Event with ID '" .. id .. "' not found.") end
    cancel_attached(env.inbox, event_out(ev))
    ev.status = "canceled"
    send(ctx, env.inbox, ev.participants, "Canceled: '" .. ev.title .. "'", "The event has been canceled.", { ev })
    return "Event with ID " .. id .. " has been canceled and participants have been notified."
  end,
}

return T
