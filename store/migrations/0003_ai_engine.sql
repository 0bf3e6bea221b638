-- The AI engine: provider credentials, AI content settings, usage events
-- and budgets, agents and their runs, and the persistent job queue.

-- API credentials. Secrets are sealed with the key derived from secret.key
-- (XChaCha20-Poly1305, bound to the row id); only a masked hint is stored
-- in the clear.
CREATE TABLE credentials (
    id             INTEGER PRIMARY KEY,
    name           TEXT    NOT NULL,
    provider       TEXT    NOT NULL CHECK (provider IN ('openai', 'anthropic', 'openai_compatible', 'wordpress', 'serp')),
    base_url       TEXT    NOT NULL DEFAULT '',
    username       TEXT    NOT NULL DEFAULT '',
    secret         BLOB    NOT NULL,
    secret_hint    TEXT    NOT NULL,
    default_model  TEXT    NOT NULL DEFAULT '',
    environment_id INTEGER REFERENCES environments (id) ON DELETE CASCADE,
    last_tested_at TEXT,
    last_test_ok   INTEGER,
    last_test_error TEXT   NOT NULL DEFAULT '',
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);
CREATE INDEX credentials_env ON credentials (environment_id);

-- AI content settings: one global row (environment_id NULL) and optional
-- overrides per environment. NULL columns inherit.
CREATE TABLE ai_settings (
    id                 INTEGER PRIMARY KEY,
    environment_id     INTEGER UNIQUE REFERENCES environments (id) ON DELETE CASCADE,
    credential_id      INTEGER REFERENCES credentials (id) ON DELETE SET NULL,
    model              TEXT,
    temperature        REAL,
    max_output_tokens  INTEGER,
    tone               TEXT,
    language           TEXT,
    target_word_count  INTEGER,
    monthly_budget_usd REAL,
    price_overrides    TEXT NOT NULL DEFAULT '{}',
    updated_at         TEXT NOT NULL
);
CREATE UNIQUE INDEX ai_settings_global ON ai_settings ((environment_id IS NULL)) WHERE environment_id IS NULL;

CREATE TABLE agents (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER REFERENCES environments (id) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    description    TEXT    NOT NULL DEFAULT '',
    kind           TEXT    NOT NULL CHECK (kind IN ('writer', 'editor', 'researcher', 'seo')),
    credential_id  INTEGER REFERENCES credentials (id) ON DELETE SET NULL,
    model          TEXT    NOT NULL DEFAULT '',
    system_prompt  TEXT    NOT NULL DEFAULT '',
    temperature    REAL,
    max_tokens     INTEGER,
    is_active      INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    created_by     INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);
CREATE INDEX agents_env ON agents (environment_id);

-- Which environments may use an agent, beyond its own.
CREATE TABLE agent_assignments (
    agent_id       INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    PRIMARY KEY (agent_id, environment_id)
) WITHOUT ROWID;
CREATE INDEX agent_assignments_env ON agent_assignments (environment_id);

-- The persistent job queue of the background runner.
CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY,
    kind         TEXT    NOT NULL,
    payload      TEXT    NOT NULL DEFAULT '{}',
    status       TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    run_after    TEXT    NOT NULL,
    last_error   TEXT    NOT NULL DEFAULT '',
    created_at   TEXT    NOT NULL,
    started_at   TEXT,
    finished_at  TEXT,
    updated_at   TEXT    NOT NULL
);
CREATE INDEX jobs_queue ON jobs (status, run_after, id);

CREATE TABLE agent_runs (
    id             INTEGER PRIMARY KEY,
    agent_id       INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    environment_id INTEGER REFERENCES environments (id) ON DELETE SET NULL,
    user_id        INTEGER REFERENCES users (id) ON DELETE SET NULL,
    job_id         INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    input          TEXT    NOT NULL,
    variables      TEXT    NOT NULL DEFAULT '{}',
    status         TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    output         TEXT    NOT NULL DEFAULT '',
    error          TEXT    NOT NULL DEFAULT '',
    model          TEXT    NOT NULL DEFAULT '',
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    cost_usd       REAL,
    queued_at      TEXT    NOT NULL,
    started_at     TEXT,
    finished_at    TEXT
);
CREATE INDEX agent_runs_agent ON agent_runs (agent_id, id);
CREATE INDEX agent_runs_user ON agent_runs (user_id, id);

-- One row per provider call, successful or not.
CREATE TABLE usage_events (
    id             INTEGER PRIMARY KEY,
    created_at     TEXT    NOT NULL,
    provider       TEXT    NOT NULL,
    model          TEXT    NOT NULL,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    cached_tokens  INTEGER NOT NULL DEFAULT 0,
    cost_usd       REAL,
    latency_ms     INTEGER NOT NULL DEFAULT 0,
    status         TEXT    NOT NULL CHECK (status IN ('ok', 'error')),
    error          TEXT    NOT NULL DEFAULT '',
    source         TEXT    NOT NULL CHECK (source IN ('execution', 'chat', 'live', 'scout', 'autopilot', 'test')),
    user_id        INTEGER REFERENCES users (id) ON DELETE SET NULL,
    environment_id INTEGER REFERENCES environments (id) ON DELETE SET NULL,
    agent_id       INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    credential_id  INTEGER REFERENCES credentials (id) ON DELETE SET NULL
);
CREATE INDEX usage_events_time ON usage_events (created_at);
CREATE INDEX usage_events_env_time ON usage_events (environment_id, created_at);
CREATE INDEX usage_events_user_time ON usage_events (user_id, created_at);
CREATE INDEX usage_events_agent_time ON usage_events (agent_id, created_at);

-- Budget thresholds already announced, so each is announced once a month.
CREATE TABLE budget_alerts (
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    month          TEXT    NOT NULL,
    threshold      INTEGER NOT NULL,
    created_at     TEXT    NOT NULL,
    PRIMARY KEY (environment_id, month, threshold)
) WITHOUT ROWID;
