-- Foundation: accounts, sessions, two-factor auth, licenses, environments,
-- and instance settings. Times are UTC text in the fixed-width form
-- YYYY-MM-DDTHH:MM:SS.sssZ so that text order is time order.

CREATE TABLE users (
    id               INTEGER PRIMARY KEY,
    email            TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    username         TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    full_name        TEXT    NOT NULL DEFAULT '',
    password_hash    TEXT    NOT NULL,
    role             TEXT    NOT NULL CHECK (role IN ('super_admin', 'admin', 'editor', 'viewer')),
    is_active        INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    -- TOTP secrets are sealed with the key derived from secret.key.
    totp_secret      BLOB,
    totp_pending     BLOB,
    totp_enabled     INTEGER NOT NULL DEFAULT 0 CHECK (totp_enabled IN (0, 1)),
    totp_last_step   INTEGER NOT NULL DEFAULT 0,
    avatar_version   INTEGER NOT NULL DEFAULT 0,
    last_login_at    TEXT,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL
);
CREATE INDEX users_role ON users (role, is_active);

-- Avatars live apart from users so the row read on every request stays small.
CREATE TABLE user_avatars (
    user_id      INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    content_type TEXT    NOT NULL,
    data         BLOB    NOT NULL,
    updated_at   TEXT    NOT NULL
);

CREATE TABLE recovery_codes (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  BLOB    NOT NULL,
    used_at    TEXT,
    UNIQUE (user_id, code_hash)
);

CREATE TABLE sessions (
    id               INTEGER PRIMARY KEY,
    user_id          INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at       TEXT    NOT NULL,
    last_seen_at     TEXT    NOT NULL,
    -- token_expires_at: expiry of the newest token issued for the session;
    -- expires_at: the absolute end, past which refresh fails.
    token_expires_at TEXT    NOT NULL,
    expires_at       TEXT    NOT NULL,
    revoked_at       TEXT,
    ip               TEXT    NOT NULL DEFAULT '',
    user_agent       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX sessions_user ON sessions (user_id, revoked_at, token_expires_at);

-- Failed sign-in attempts per e-mail address, whether or not an account has
-- it, so that the lock-out reveals nothing about which addresses exist.
CREATE TABLE login_failures (
    email           TEXT    PRIMARY KEY COLLATE NOCASE,
    failures        INTEGER NOT NULL,
    last_failure_at TEXT    NOT NULL,
    locked_until    TEXT
);

CREATE TABLE licenses (
    user_id      INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    key_id       TEXT    NOT NULL UNIQUE,
    license_key  TEXT    NOT NULL,
    activated_at TEXT    NOT NULL
);

CREATE TABLE environments (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    slug          TEXT    NOT NULL UNIQUE,
    description   TEXT    NOT NULL DEFAULT '',
    configuration TEXT    NOT NULL DEFAULT '{}',
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL
);

CREATE TABLE user_environments (
    user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, environment_id)
) WITHOUT ROWID;
CREATE INDEX user_environments_env ON user_environments (environment_id);

-- Instance-wide settings as typed JSON values under a key.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) WITHOUT ROWID;
