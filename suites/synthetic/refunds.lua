-- Synthetic cases drafted by `evalua synth` (SPEC §23); none yet. Draft some
-- (see docs/guide.md, "No traces yet: drafting cases"):
--   evalua synth suites/refunds_drafted.lua --from suites/requirements/refunds.md --into suites/synthetic/refunds.lua
return {}
