-- PostgreSQL text of 0027_usage_and_cost.sql (translated like every
-- migration, see store/postgres.go): the same, except that the rebuilt
-- usage_events carries on the old table's identity sequence with setval,
-- where SQLite's renames its row of sqlite_sequence.

-- Usage and cost (issue 21, items 7-10).

-- Why each generation stopped (ai.Stop's words: stop, length, cancelled,
-- error, ...); '' for those made before this, and while it runs.
ALTER TABLE agent_runs ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE cie_runs ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE chat_messages ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE live_generations ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';

-- Money is integer micro-dollars (millionths of a US dollar, store.Micros)
-- everywhere it is stored, so that sums are exact: a REAL sum of small
-- costs drifted (0.000016349999999999998). Each cost_usd REAL becomes
-- cost_micros INTEGER, rounded once to the nearest millionth (NULL, an
-- unknown cost, stays NULL); each budget in dollars becomes one in micros
-- (at least 1: a budget is more than 0). The API still speaks dollars.
ALTER TABLE agent_runs ADD COLUMN cost_micros INTEGER;
UPDATE agent_runs SET cost_micros = CAST(round(cost_usd * 1000000) AS INTEGER) WHERE cost_usd IS NOT NULL;
ALTER TABLE agent_runs DROP COLUMN cost_usd;
ALTER TABLE cie_runs ADD COLUMN cost_micros INTEGER;
UPDATE cie_runs SET cost_micros = CAST(round(cost_usd * 1000000) AS INTEGER) WHERE cost_usd IS NOT NULL;
ALTER TABLE cie_runs DROP COLUMN cost_usd;
ALTER TABLE chat_messages ADD COLUMN cost_micros INTEGER;
UPDATE chat_messages SET cost_micros = CAST(round(cost_usd * 1000000) AS INTEGER) WHERE cost_usd IS NOT NULL;
ALTER TABLE chat_messages DROP COLUMN cost_usd;
ALTER TABLE live_generations ADD COLUMN cost_micros INTEGER;
UPDATE live_generations SET cost_micros = CAST(round(cost_usd * 1000000) AS INTEGER) WHERE cost_usd IS NOT NULL;
ALTER TABLE live_generations DROP COLUMN cost_usd;
ALTER TABLE autopilot_steps ADD COLUMN cost_micros INTEGER;
UPDATE autopilot_steps SET cost_micros = CAST(round(cost_usd * 1000000) AS INTEGER) WHERE cost_usd IS NOT NULL;
ALTER TABLE autopilot_steps DROP COLUMN cost_usd;
ALTER TABLE ai_settings ADD COLUMN monthly_budget_micros INTEGER;
UPDATE ai_settings SET monthly_budget_micros = CAST(round(monthly_budget_usd * 1000000) AS INTEGER) WHERE monthly_budget_usd IS NOT NULL;
ALTER TABLE ai_settings DROP COLUMN monthly_budget_usd;
ALTER TABLE autopilots ADD COLUMN daily_budget_micros INTEGER CHECK (daily_budget_micros > 0);
ALTER TABLE autopilots ADD COLUMN monthly_budget_micros INTEGER CHECK (monthly_budget_micros > 0);
UPDATE autopilots SET daily_budget_micros = max(1, CAST(round(daily_budget_usd * 1000000) AS INTEGER)) WHERE daily_budget_usd IS NOT NULL;
UPDATE autopilots SET monthly_budget_micros = max(1, CAST(round(monthly_budget_usd * 1000000) AS INTEGER)) WHERE monthly_budget_usd IS NOT NULL;
ALTER TABLE autopilots DROP COLUMN daily_budget_usd;
ALTER TABLE autopilots DROP COLUMN monthly_budget_usd;

-- Budgets in tokens beside those in dollars: a model without a price
-- (a local one) costs nothing anyone knows, so only its tokens can bound
-- it. Input and output tokens together (cached input included).
ALTER TABLE ai_settings ADD COLUMN monthly_budget_tokens INTEGER;
ALTER TABLE autopilots ADD COLUMN daily_budget_tokens INTEGER CHECK (daily_budget_tokens > 0);
ALTER TABLE autopilots ADD COLUMN monthly_budget_tokens INTEGER CHECK (monthly_budget_tokens > 0);

-- A call stopped or cancelled before it finished is 'cancelled', not an
-- error. The status CHECK cannot be altered: the table is rebuilt (the
-- migrations run with foreign keys off and legacy_alter_table on), its
-- AUTOINCREMENT high-water mark carried over so that no id comes back.
CREATE TABLE usage_events_0025 (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at     TEXT    NOT NULL,
    provider       TEXT    NOT NULL,
    model          TEXT    NOT NULL,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    cached_tokens  INTEGER NOT NULL DEFAULT 0,
    cost_micros    INTEGER,
    latency_ms     INTEGER NOT NULL DEFAULT 0,
    status         TEXT    NOT NULL CHECK (status IN ('ok', 'error', 'cancelled')),
    error          TEXT    NOT NULL DEFAULT '',
    source         TEXT    NOT NULL CHECK (source IN ('execution', 'chat', 'live', 'scout', 'autopilot', 'cie', 'search', 'test')),
    user_id        INTEGER REFERENCES users (id) ON DELETE SET NULL,
    environment_id INTEGER REFERENCES environments (id) ON DELETE SET NULL,
    agent_id       INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    credential_id  INTEGER REFERENCES credentials (id) ON DELETE SET NULL,
    estimated      INTEGER NOT NULL DEFAULT 0 CHECK (estimated IN (0, 1))
);
INSERT INTO usage_events_0025 (id, created_at, provider, model, input_tokens, output_tokens, cached_tokens, cost_micros,
    latency_ms, status, error, source, user_id, environment_id, agent_id, credential_id, estimated)
    SELECT id, created_at, provider, model, input_tokens, output_tokens, cached_tokens, CAST(round(cost_usd * 1000000) AS INTEGER),
    latency_ms, status, error, source, user_id, environment_id, agent_id, credential_id, estimated FROM usage_events;
-- The new table's sequence is the old one's (which is at least its
-- largest id, and more when the newest events were deleted); a sequence
-- never used (last NULL) leaves the new one fresh.
SELECT setval(pg_get_serial_sequence('usage_events_0025', 'id'), last)
    FROM (SELECT pg_sequence_last_value(pg_get_serial_sequence('usage_events', 'id')::regclass) AS last) s
    WHERE last IS NOT NULL;
DROP TABLE usage_events;
ALTER TABLE usage_events_0025 RENAME TO usage_events;
CREATE INDEX usage_events_time ON usage_events (created_at);
CREATE INDEX usage_events_env_time ON usage_events (environment_id, created_at, id, user_id);
CREATE INDEX usage_events_user_time ON usage_events (user_id, created_at);
CREATE INDEX usage_events_agent_time ON usage_events (agent_id, created_at);
CREATE INDEX usage_events_model ON usage_events (model, created_at);
CREATE INDEX usage_events_source ON usage_events (source, created_at);
CREATE INDEX usage_events_status ON usage_events (status, created_at);
