-- bench/throughput.lua: the throughput benchmark's suite (see bench/run.sh).
-- 100 cases; in each trial a scripted agent makes 3 tool calls against a
-- 1,000-row fixture, and 6 checks grade it (5 expectations and 1
-- prohibited-state query). `--trials N` sets the run's size: 100 × N trials.
-- The suite itself is bench/shared/inventory.lua, shared with throughput_pg.lua.

return require("shared.inventory").suite {
  name = "throughput",
  sandbox = { db = "sqlite", clock = "2026-11-03T10:00:00Z" },
  fixture = "fixtures/items_1000.sql",
}
