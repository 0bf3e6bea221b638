-- Personal API tokens (server/auth, docs/tokens.md): a named secret a user
-- makes for scripts, sent as "Authorization: Bearer cdk_...". Only the
-- SHA-256 of the secret is kept (secret_hash, unique: the lookup of every
-- request that carries one); prefix is its first characters, enough to
-- tell tokens apart in a list and never enough to use one.
--
-- limited: the token sees only the environments in api_token_environments
-- (of those its user still has). It is a column of its own so that a token
-- whose environments were all deleted sees nothing, rather than falling
-- back to everything.
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    prefix       TEXT    NOT NULL,
    secret_hash  BLOB    NOT NULL,
    read_only    INTEGER NOT NULL DEFAULT 0,
    limited      INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT    NOT NULL,
    last_used_at TEXT,
    expires_at   TEXT,
    revoked_at   TEXT
);
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (secret_hash);
-- A user's tokens not revoked, newest first (GET /api/auth/tokens): the
-- count reads this index alone.
CREATE INDEX api_tokens_user ON api_tokens (user_id, revoked_at, id);

CREATE TABLE api_token_environments (
    token_id       INTEGER NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    PRIMARY KEY (token_id, environment_id)
) WITHOUT ROWID;
CREATE INDEX api_token_environments_env ON api_token_environments (environment_id);
