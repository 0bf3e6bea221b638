-- Costs that are not finite numbers were stored while price overrides had
-- no upper bound (1e308 made +Inf). JSON cannot hold them, so every answer
-- including one failed: they become unknown (NULL), as a cost computed now
-- that is not finite is. SQLite reads 9e999 as +Inf; NaN is stored as NULL.
UPDATE usage_events SET cost_usd = NULL WHERE cost_usd IN (9e999, -9e999);
UPDATE agent_runs SET cost_usd = NULL WHERE cost_usd IN (9e999, -9e999);
