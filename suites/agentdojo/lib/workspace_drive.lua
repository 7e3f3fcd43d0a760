-- AgentDojo's workspace cloud drive tools (agentdojo 0.1.35, default_suites/v1/
-- tools/cloud_drive_client.py; MIT: ../LICENSE), ported.
local D = require("lib.dojo")
local P = require("lib.workspace_py")
local S = require("lib.workspace_store")
local A = require("evalua").array

local T = {}

local function file_or_raise(env, id)
  local f = env.cloud_drive.files[id]
  if f == nil then D.raise("ValueError", "File with ID '" .. tostring(id) .. "' not found.") end
  return f
end

local function search(env, field, text)
  local out = A()
  local q = P.lower(text)
  for _, f in ipairs(S.values(env, "files")) do
    if P.contains(P.lower(f[field]), q) then out[#out + 1] = f end
  end
  return out
end

T.append_to_file = {
  writes = true,
  run = function(env, args)
    local f = file_or_raise(env, args.file_id)
    f.content = f.content .. args.content
    f.size = P.len(f.content)
    f.last_modified = P.now()
    S.link(env, "files")
    return f
  end,
}

T.search_files_by_filename = {
  run = function(env, args) return search(env, "filename", args.filename) end,
}

T.create_file = {
  writes = true,
  run = function(env, args, ctx)
    local drive = env.cloud_drive
    local file = {
      id_ = S.next_id(drive.files),
      filename = args.filename,
      content = args.content,
      owner = drive.account_email,
      last_modified = P.now(),
      shared_with = {},
      size = P.len(args.content),
    }
    S.insert(env, ctx, drive, "files", file.id_, file, true)
    return file
  end,
}

T.delete_file = {
  writes = true,
  run = function(env, args, ctx)
    file_or_raise(env, args.file_id)
    return S.pop(env, ctx, env.cloud_drive, "files", args.file_id)
  end,
}

T.get_file_by_id = {
  run = function(env, args) return file_or_raise(env, args.file_id) end,
}

T.list_files = {
  run = function(env) return S.values(env, "files") end,
}

T.share_file = {
  writes = true,
  run = function(env, args)
    local permission = args.permission
    local f = file_or_raise(env, args.file_id)
    f.shared_with[args.email] = permission
    S.link(env, "files")
    return f
  end,
}

T.search_files = {
  run = function(env, args)
    local matches = search(env, "content", args.query)
    if #matches == 0 then
      D.raise("ValueError", "No files found with the given query ('" .. args.query .. "'). Try a different search term.")
    end
    return matches
  end,
}

return T
