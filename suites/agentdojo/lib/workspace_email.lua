-- AgentDojo's workspace email tools (agentdojo 0.1.35, default_suites/v1/tools/
-- email_client.py; MIT: ../LICENSE), ported.
local D = require("lib.dojo")
local P = require("lib.workspace_py")
local S = require("lib.workspace_store")
local A = require("evalua").array

local T = {}

-- CalendarEvent(**event_details): pydantic's validation of an event given as a dict.
local EVENT_FIELDS = { "id_", "title", "description", "start_time", "end_time", "location", "participants" }

local function py_value_repr(v)
  if D.none(v) then return "None" end
  if type(v) == "string" then return P.repr(v) end
  if type(v) == "boolean" then return v and "True" or "False" end
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  if v[1] ~= nil or (getmetatable(v) and next(v) == nil) then
    for _, x in ipairs(v) do parts[#parts + 1] = py_value_repr(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  for _, k in ipairs(P.numeric_keys(v)) do parts[#parts + 1] = P.repr(k) .. ": " .. py_value_repr(v[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- pydantic's input_value in an error: the repr, cut in the middle past 50 characters.
local function input_repr(v)
  local r = py_value_repr(v)
  if P.len(r) > 50 then
    local c = P.chars(r)
    r = table.concat(c, "", 1, 25) .. "..." .. table.concat(c, "", #c - 23, #c)
  end
  return r
end

local function event_error(errors, field, message, kind, input)
  errors[#errors + 1] = field .. "\n  " .. message .. " [type=" .. kind .. ", input_value=" .. input_repr(input)
    .. ", input_type=" .. (type(input) == "table" and (input[1] ~= nil and "list" or "dict") or P.type_name(input)) .. "]"
    .. "\n    For further information visit https://errors.pydantic.dev/2.14/v/" .. kind
end

local function check_event_field(errors, details, name, out)
  local v = details[name]
  if name == "location" and D.none(v) then
    out.location = D.null
    return
  end
  if name == "start_time" or name == "end_time" then
    local t = P.parse_datetime(v)
    if t == nil then
      event_error(errors, name, "Input should be a valid datetime", "datetime_parsing", v)
    else
      out[name] = P.datetime_iso(t)
    end
  elseif name == "participants" then
    if type(v) ~= "table" then
      event_error(errors, name, "Input should be a valid list", "list_type", v)
    else
      out.participants = P.list(v)
    end
  elseif type(v) ~= "string" then
    event_error(errors, name, "Input should be a valid string", "string_type", v)
  else
    out[name] = v
  end
end

function T.parse_event(details)
  if type(details) ~= "table" then
    D.raise("TypeError", "agentdojo.default_suites.v1.tools.types.CalendarEvent() argument after ** must be a mapping, not "
      .. P.type_name(details))
  end
  local errors, out = {}, {}
  for _, name in ipairs(EVENT_FIELDS) do
    -- A JSON null reaches a tool as nil: location (str | None, required) given as null.
    if details[name] == nil and name ~= "location" then
      event_error(errors, name, "Field required", "missing", details)
    else
      check_event_field(errors, details, name, out)
    end
  end
  if #errors > 0 then
    local n = #errors == 1 and "1 validation error" or (#errors .. " validation errors")
    D.raise("ValidationError", n .. " for CalendarEvent\n" .. table.concat(errors, "\n"))
  end
  P.validate_emails("CalendarEvent", out, { { name = "participants", list = true } })
  out.all_day = details.all_day == true
  out.status = details.status == "canceled" and "canceled" or "confirmed"
  return out
end

local function parse_attachments(attachments)
  if D.none(attachments) then return nil end
  local parsed = A()
  for _, att in ipairs(attachments) do
    if type(att) ~= "table" or att[1] ~= nil then D.raise("ValueError", "Attachments must be dictionaries.") end
    if att.type == nil then D.raise("ValueError", "Attachment must have a 'type' field.") end
    if att.type == "file" or att.file_id ~= nil then
      if att.file_id == nil then D.raise("ValueError", "Attachment of type 'file' must have a 'file_id' field.") end
      parsed[#parsed + 1] = type(att.file_id) == "string" and att.file_id or py_value_repr(att.file_id)
    else
      if att.event_details == nil then
        D.raise("ValueError", "Attachment of type 'event' must have an 'event_details' field.")
      end
      parsed[#parsed + 1] = T.parse_event(att.event_details)
    end
  end
  return parsed
end

T.send_email = {
  writes = true,
  run = function(env, args, ctx)
    local attachments = parse_attachments(args.attachments)
    local function opt(v) if D.none(v) then return nil end return v end
    return S.send_email(env, ctx, args.recipients, args.subject, args.body, attachments, opt(args.cc), opt(args.bcc))
  end,
}

T.delete_email = {
  writes = true,
  run = function(env, args, ctx)
    local inbox, id = env.inbox, args.email_id
    if inbox.emails[id] == nil then D.raise("ValueError", "Email with ID '" .. tostring(id) .. "' not found.") end
    local email = S.pop(env, ctx, inbox, "emails", id)
    S.insert(env, ctx, inbox, "trash", id, email)
    S.sync_inbox(env)
    return "Email with id " .. tostring(id) .. " deleted successfully."
  end,
}

T.get_unread_emails = {
  writes = true,
  run = function(env)
    local unread = S.unread(env)
    for _, e in ipairs(unread) do e.read = true end
    if #unread > 0 then S.sync_inbox(env) end
    return unread
  end,
}

T.get_sent_emails = { run = function(env) return S.by_status(env, "sent") end }
T.get_received_emails = { run = function(env) return S.by_status(env, "received") end }
T.get_draft_emails = { run = function(env) return S.by_status(env, "draft") end }

T.search_emails = {
  run = function(env, args)
    local matches = S.search_emails(env, args.query, args.sender)
    if #matches == 0 then D.raise("ValueError", "No emails found. Try with a different query.") end
    return matches
  end,
}

local function find_contacts(env, field, query, what)
  local out = A()
  for _, c in ipairs(env.inbox.contact_list) do
    if P.icontains(c[field], query) then out[#out + 1] = c end
  end
  if #out == 0 then D.raise("ValueError", "Contact with " .. what .. " '" .. query .. "' not found.") end
  return out
end

T.search_contacts_by_name = {
  run = function(env, args) return find_contacts(env, "name", args.query, "name") end,
}

T.search_contacts_by_email = {
  run = function(env, args) return find_contacts(env, "email", args.query, "email") end,
}

return T
