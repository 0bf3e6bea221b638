-- PostgreSQL text of 0007_finite_costs.sql: the infinities by name
-- (PostgreSQL reads 9e999 as a numeric out of a double's range).
UPDATE usage_events SET cost_usd = NULL WHERE cost_usd IN ('Infinity', '-Infinity');
UPDATE agent_runs SET cost_usd = NULL WHERE cost_usd IN ('Infinity', '-Infinity');
