-- evalua.tools: a file and shell tool kit for coding agents.
--
-- Each constructor returns a tool spec ready for `suite:tool(...)`;
-- `tools.register(suite)` declares all four. The tools act on the trial's
-- own work dir and go through the executor like any other tool (budgets,
-- `requires` policies, recording). A path that escapes the work dir (an
-- absolute path, `..`, a symlink pointing outside) is *denied* and recorded.
--
-- `run` executes a command with the work dir as its current directory, a
-- timeout, an output cap and a process-group kill. It confines where the
-- command starts, not what it may do: it is not a security sandbox.

local tools = {}

local COMMON = { name = true, description = true, requires = true }

local function opts_of(what, opts, extra)
  opts = opts or {}
  if type(opts) ~= "table" then error(what .. ": options must be a table, got " .. type(opts), 3) end
  for k in pairs(opts) do
    if not COMMON[k] and not extra[k] then
      local names = {}
      for n in pairs(COMMON) do names[#names + 1] = n end
      for n in pairs(extra) do names[#names + 1] = n end
      table.sort(names)
      error(string.format("%s: unknown option '%s' (known: %s)", what, tostring(k), table.concat(names, ", ")), 3)
    end
  end
  for k in pairs(extra) do
    if opts[k] ~= nil and type(opts[k]) ~= "number" then
      error(string.format("%s: '%s' must be a number", what, k), 3)
    end
  end
  return opts
end

-- The absolute path of `p` inside the work dir, or the call is denied.
local function confined(ctx, p)
  local full, why = ctx.confine(p)
  if not full then ctx.deny(why) end
  return full
end

-- A fresh schema table per tool: a suite may change its own copy, never the next one's.
local function PATH() return { type = "string", description = "A path relative to the work dir" } end

--- `read_file { path }` → `{ path, content, truncated }` (effect "read").
function tools.read_file(opts)
  opts = opts_of("tools.read_file", opts, { max_bytes = true })
  local max = opts.max_bytes or 256 * 1024
  return {
    name = opts.name or "read_file",
    description = opts.description or "Read a text file of the repository (path relative to its root).",
    params = { type = "object", properties = { path = PATH() }, required = { "path" }, additionalProperties = false },
    effect = "read",
    requires = opts.requires,
    run = function(ctx, args)
      confined(ctx, args.path)
      local content = ctx.read_file(args.path)
      if content == nil then error("no such file: " .. args.path, 0) end
      local truncated = #content > max
      if truncated then content = content:sub(1, max) end
      return { path = args.path, content = content, truncated = truncated }
    end,
  }
end

--- `write_file { path, content }` → `{ path, bytes }`, creating folders as needed (effect "write").
function tools.write_file(opts)
  opts = opts_of("tools.write_file", opts, {})
  return {
    name = opts.name or "write_file",
    description = opts.description or "Create or replace a file of the repository with the given content.",
    params = {
      type = "object",
      properties = { path = PATH(), content = { type = "string", description = "The whole new content" } },
      required = { "path", "content" },
      additionalProperties = false,
    },
    effect = "write",
    requires = opts.requires,
    run = function(ctx, args)
      confined(ctx, args.path)
      ctx.write_file(args.path, args.content)
      return { path = args.path, bytes = #args.content }
    end,
  }
end

--- `list_dir { path = "." }` → `{ path, entries = { { name, type = "file"|"dir"|"symlink", size } } }` (effect "read").
function tools.list_dir(opts)
  opts = opts_of("tools.list_dir", opts, {})
  return {
    name = opts.name or "list_dir",
    description = opts.description or "List a folder of the repository (default: its root).",
    params = { type = "object", properties = { path = PATH() }, additionalProperties = false },
    effect = "read",
    requires = opts.requires,
    run = function(ctx, args)
      local path = args.path or "."
      if path ~= "." and path ~= "" then confined(ctx, path) end
      return { path = path, entries = ctx.list_dir(path) }
    end,
  }
end

--- `run { cmd, timeout_s }`: a command (argv list, or a string for `sh -c`) in the work dir →
--- `{ exit_code, signal, timed_out, output_limited, duration_ms, stdout, stderr }` (effect "external").
function tools.run(opts)
  opts = opts_of("tools.run", opts, { timeout_s = true, max_output = true, tail = true })
  local max_timeout = opts.timeout_s or 30
  return {
    name = opts.name or "run",
    description = opts.description
      or ("Run a command in the repository's root (argv list, or a shell string); at most "
        .. max_timeout .. " s, killed with everything it started after that."),
    params = {
      type = "object",
      properties = {
        cmd = {
          anyOf = {
            { type = "string", minLength = 1 },
            { type = "array", items = { type = "string" }, minItems = 1 },
          },
          description = "The command: a list like [\"python3\", \"-m\", \"unittest\"] or a shell string",
        },
        timeout_s = { type = "number", exclusiveMinimum = 0, description = "At most " .. max_timeout },
      },
      required = { "cmd" },
      additionalProperties = false,
    },
    effect = "external",
    requires = opts.requires,
    run = function(ctx, args)
      local timeout = math.min(args.timeout_s or max_timeout, max_timeout)
      local r = ctx.exec(args.cmd, { timeout_s = timeout, max_output = opts.max_output, tail = opts.tail })
      return {
        exit_code = r.exit_code, signal = r.signal, timed_out = r.timed_out, output_limited = r.output_limited,
        duration_ms = r.duration_ms, stdout = r.stdout, stderr = r.stderr,
      }
    end,
  }
end

local ORDER = { "read_file", "write_file", "list_dir", "run" }

--- Declare the kit's tools on `suite`: all four, or those in `only`; `opts[name]` passes options to one tool.
function tools.register(suite, opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("tools.register: options must be a table", 2) end
  local wanted = {}
  for _, n in ipairs(opts.only or ORDER) do
    if tools[n] == nil or n == "register" then error("tools.register: unknown tool '" .. tostring(n) .. "'", 2) end
    wanted[n] = true
  end
  for k in pairs(opts) do
    if k ~= "only" and not wanted[k] then
      error("tools.register: unknown option '" .. tostring(k) .. "' (only, read_file, write_file, list_dir, run)", 2)
    end
  end
  local declared = {}
  for _, n in ipairs(ORDER) do
    if wanted[n] then
      local spec = tools[n](opts[n])
      if suite._tool_index[spec.name] then
        error("tools.register: the suite already has a tool named '" .. spec.name .. "'", 2)
      end
      declared[#declared + 1] = suite:tool(spec)
    end
  end
  return declared
end

return tools
