-- Usage and cost (issue 21, items 7-10).

-- Why each generation stopped (ai.Stop's words: stop, length, cancelled,
-- error, ...); '' for those made before this, and while it runs.
ALTER TABLE agent_runs ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE cie_runs ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE chat_messages ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE live_generations ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';

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
    cost_usd       REAL,
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
INSERT INTO usage_events_0025 (id, created_at, provider, model, input_tokens, output_tokens, cached_tokens, cost_usd,
    latency_ms, status, error, source, user_id, environment_id, agent_id, credential_id, estimated)
    SELECT id, created_at, provider, model, input_tokens, output_tokens, cached_tokens, cost_usd,
    latency_ms, status, error, source, user_id, environment_id, agent_id, credential_id, estimated FROM usage_events;
-- The new table's sequence is the old one's (which is at least its
-- largest id, and more when the newest events were deleted).
DELETE FROM sqlite_sequence WHERE name = 'usage_events_0025';
UPDATE sqlite_sequence SET name = 'usage_events_0025' WHERE name = 'usage_events';
DROP TABLE usage_events;
ALTER TABLE usage_events_0025 RENAME TO usage_events;
CREATE INDEX usage_events_time ON usage_events (created_at);
CREATE INDEX usage_events_env_time ON usage_events (environment_id, created_at, id, user_id);
CREATE INDEX usage_events_user_time ON usage_events (user_id, created_at);
CREATE INDEX usage_events_agent_time ON usage_events (agent_id, created_at);
CREATE INDEX usage_events_model ON usage_events (model, created_at);
CREATE INDEX usage_events_source ON usage_events (source, created_at);
CREATE INDEX usage_events_status ON usage_events (status, created_at);
