-- Signed webhooks (server/webhook, docs/webhooks.md): an environment's
-- receivers of events, each delivery persisted before it is sent and every
-- attempt kept.
--
-- A webhook's secret is needed to sign, so it is sealed with secret.key
-- (as credentials are), bound to its row ("webhook:<id>"); prefix is its
-- first characters, for telling secrets apart after a rotation. events is
-- a JSON array of the event types it wants. failing_since is the first
-- failed attempt since the last success: a webhook failing for days is
-- switched off (enabled = 0, disabled_reason says why).
CREATE TABLE webhooks (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id       INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    url                  TEXT    NOT NULL,
    description          TEXT    NOT NULL DEFAULT '',
    events               TEXT    NOT NULL DEFAULT '[]',
    secret_sealed        BLOB    NOT NULL,
    secret_prefix        TEXT    NOT NULL,
    enabled              INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    disabled_reason      TEXT    NOT NULL DEFAULT '',
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    failing_since        TEXT,
    last_success_at      TEXT,
    last_failure_at      TEXT,
    created_by           INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at           TEXT    NOT NULL,
    updated_at           TEXT    NOT NULL
);
-- The list, newest first, over the environments a scope sees and within
-- one.
CREATE INDEX webhooks_created ON webhooks (created_at, id, environment_id);
CREATE INDEX webhooks_env ON webhooks (environment_id, created_at, id);
CREATE INDEX webhooks_created_by ON webhooks (created_by) WHERE created_by IS NOT NULL;

-- A delivery is one event for one webhook: payload is the exact body
-- signed and sent, msg_id the webhook-id header, the same on every attempt.
-- status: pending (due at next_attempt_at), sending (claimed by a sender
-- until next_attempt_at; a claim that expires is due again), succeeded,
-- failed (retries exhausted). attempts counts the attempts of the current
-- schedule (a re-send starts a new one).
CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id      INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    environment_id  INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    msg_id          TEXT    NOT NULL,
    event_type      TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'succeeded', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_status     INTEGER,
    last_error      TEXT    NOT NULL DEFAULT '',
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_msg ON webhook_deliveries (msg_id);
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_env ON webhook_deliveries (environment_id);
-- The sender's search for due work, and the schedule's earliest due time.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE next_attempt_at IS NOT NULL;
-- Housekeeping's search for finished deliveries to forget.
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (updated_at) WHERE next_attempt_at IS NULL;

-- An attempt is one request: started_at is written when it is claimed,
-- the rest when the answer (or the failure) is recorded. An attempt with no
-- finished_at was interrupted (the server stopped mid-request).
CREATE TABLE webhook_attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id   INTEGER NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    started_at    TEXT    NOT NULL,
    finished_at   TEXT,
    status_code   INTEGER,
    duration_ms   INTEGER,
    response_body TEXT    NOT NULL DEFAULT '',
    error         TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
