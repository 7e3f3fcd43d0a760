-- AgentDojo's workspace calendar tools (agentdojo 0.1.35, default_suites/v1/
-- tools/calendar_client.py; MIT: ../LICENSE), ported.
local D = require("lib.dojo")
local P = require("lib.workspace_py")
local S = require("lib.workspace_store")
local A = require("evalua").array

local T = {}

local function event_or_raise(env, id)
  local ev = env.calendar.events[id]
  if ev == nil then D.raise("ValueError", "Event with ID '" .. tostring(id) .. "' not found.") end
  return ev
end

-- The event's calendar-notification email: Inbox.send_email with the event
-- as its attachment, the very object (pydantic keeps a model instance): a
-- later change to the event shows in the emails that attached it, as long
-- as the trial's environment is in memory (lib/dojo.lua keeps it for the trial).
local function notify(env, ctx, recipients, subject, body, ev)
  S.send_email(env, ctx, recipients, subject, body, { ev })
end

-- The notification of a change Python made in place: should the email fail
-- (a participant added unchecked is no email address), the change stays
-- (lib/dojo.lua writes back what a tool changed before it raised).
local notify_changed = notify

T.get_day_calendar_events = {
  run = function(env, args)
    local day = P.strptime(args.day, "%Y-%m-%d")
    return S.events_on(env, P.date_iso(day))
  end,
}

-- Calendar.create_event: the owner joins the participants (the caller's list
-- too), which become a set (Python's order of a set of text varies from run
-- to run: here, first occurrence).
local function create_event(env, ctx, title, description, start_time, end_time, location, participants)
  local cal = env.calendar
  local id = S.next_id(cal.events)
  participants[#participants + 1] = cal.account_email
  local unique, seen = A(), {}
  for _, p in ipairs(participants) do
    if not seen[p] then
      seen[p] = true
      unique[#unique + 1] = p
    end
  end
  local event = {
    id_ = id, title = title, description = description, start_time = start_time, end_time = end_time,
    location = D.none(location) and D.null or location, participants = unique, all_day = false, status = "confirmed",
  }
  P.validate_emails("CalendarEvent", event, { { name = "participants", list = true } })
  S.insert(env, ctx, cal, "events", id, event, true)
  S.link(env, "events")
  return event
end

T.create_calendar_event = {
  writes = true,
  run = function(env, args, ctx)
    local start_time = P.datetime_iso(P.strptime(args.start_time, "%Y-%m-%d %H:%M"))
    local end_time = P.datetime_iso(P.strptime(args.end_time, "%Y-%m-%d %H:%M"))
    local participants = D.none(args.participants) and {} or P.list(args.participants)
    local description = args.description == nil and "" or args.description
    local event = create_event(env, ctx, args.title, description, start_time, end_time, args.location, participants)
    notify(env, ctx, participants, "Invitation: " .. args.title, description, event)
    return event
  end,
}

T.search_calendar_events = {
  run = function(env, args)
    local day = nil
    if not D.none(args.date) then day = P.date_iso(P.strptime(args.date, "%Y-%m-%d")) end
    local matches = S.search_events(env, args.query, day)
    if #matches == 0 then D.raise("ValueError", "No events found. Try with a different query.") end
    return matches
  end,
}

T.get_current_day = {
  run = function(env) return env.calendar.current_day end,
}

T.cancel_calendar_event = {
  writes = true,
  run = function(env, args, ctx)
    local ev = event_or_raise(env, args.event_id)
    ev.status = "canceled"
    S.link(env, "events")
    notify_changed(env, ctx, ev.participants, "Canceled: '" .. ev.title .. "'", "The event has been canceled.", ev)
    return "Event with ID " .. tostring(args.event_id) .. " has been canceled and participants have been notified."
  end,
}

T.reschedule_calendar_event = {
  writes = true,
  run = function(env, args, ctx)
    local new_end = nil
    if not D.none(args.new_end_time) then new_end = P.strptime(args.new_end_time, "%Y-%m-%d %H:%M") end
    local new_start = P.strptime(args.new_start_time, "%Y-%m-%d %H:%M")
    local ev = event_or_raise(env, args.event_id)
    local old_start = P.parse_datetime(ev.start_time)
    ev.start_time = P.datetime_iso(new_start)
    if new_end ~= nil then
      ev.end_time = P.datetime_iso(new_end)
    else
      local os_, ou = P.seconds(old_start)
      local es, eu = P.seconds(P.parse_datetime(ev.end_time))
      local ns = P.seconds(new_start)
      local us = eu - ou
      local secs = ns + (es - os_) + us // 1000000
      ev.end_time = P.datetime_iso(P.from_seconds(secs, us % 1000000, new_start.tz))
    end
    local s, e = P.parse_datetime(ev.start_time), P.parse_datetime(ev.end_time)
    local body = "The event has been rescheduled. It will start on  " .. P.date_iso(s) .. " at " .. P.time_iso(s)
      .. " and end on " .. P.date_iso(e) .. " at " .. P.time_iso(e) .. "."
    S.link(env, "events")
    -- The subject is not an f-string in AgentDojo: it reads as written.
    notify_changed(env, ctx, ev.participants, "Rescheduled: '{event.title}'", body, ev)
    return ev
  end,
}

T.add_calendar_event_participants = {
  writes = true,
  run = function(env, args)
    local ev = event_or_raise(env, args.event_id)
    for _, p in ipairs(args.participants) do ev.participants[#ev.participants + 1] = p end
    S.link(env, "events")
    return ev
  end,
}

return T
