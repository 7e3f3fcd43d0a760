-- bench/throughput_pg.lua: bench/throughput.lua on PostgreSQL (see bench/postgres.sh).
-- The same cases, agent, tools and checks (bench/shared/inventory.lua); each
-- trial gets its own database, copied from a template loaded with
-- fixtures/items_1000_pg.sql (the same rows with PostgreSQL's DDL). Needs EVALUA_PG_URL.

return require("shared.inventory").suite {
  name = "throughput_pg",
  sandbox = { db = "postgres", url_env = "EVALUA_PG_URL", clock = "2026-11-03T10:00:00Z" },
  fixture = "fixtures/items_1000_pg.sql",
}
