---@meta evalua.tools

-- Definitions of `require("evalua.tools")` for lua-language-server (LuaCATS).
-- The real module is stdlib/evalua/tools.lua: a file and shell tool kit for
-- coding agents. Each constructor returns a spec for `suite:tool(...)`.
-- Paths that leave the work dir are `denied` (and recorded).

---@class evalua.tools
local tools = {}

--- Options every kit tool takes.
---@class evalua.tools.Opts
---@field name? string the tool's name (default: the constructor's)
---@field description? string the description the agent reads
---@field requires? string[] tools that must have executed first (a `requires` policy)

--- `read_file { path }` → `{ path, content, truncated }` (effect "read").
---@param opts? evalua.tools.Opts|{ max_bytes?: integer }
---@return evalua.ToolSpec
function tools.read_file(opts) end

--- `write_file { path, content }` → `{ path, bytes }`, creating folders (effect "write").
---@param opts? evalua.tools.Opts
---@return evalua.ToolSpec
function tools.write_file(opts) end

--- `list_dir { path = "." }` → `{ path, entries = { { name, type, size } } }` (effect "read").
---@param opts? evalua.tools.Opts
---@return evalua.ToolSpec
function tools.list_dir(opts) end

--- `run { cmd, timeout_s }`: a command in the work dir with a timeout (default and maximum `opts.timeout_s`, 30),
--- an output cap and a process-group kill → `{ exit_code, signal, timed_out, output_limited, duration_ms, stdout, stderr }` (effect "external").
---@param opts? evalua.tools.Opts|{ timeout_s?: number, max_output?: integer, tail?: integer }
---@return evalua.ToolSpec
function tools.run(opts) end

--- Declare the kit's tools on `suite`: all four, or those in `only`; `opts.read_file`, `opts.run`, ... pass options to one tool.
---@param suite evalua.Suite
---@param opts? { only?: string[], read_file?: table, write_file?: table, list_dir?: table, run?: table }
---@return evalua.Tool[]
function tools.register(suite, opts) end

return tools
