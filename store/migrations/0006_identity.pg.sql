-- PostgreSQL text of 0006_identity.sql: PostgreSQL named the index of
-- users.email's UNIQUE users_email_key, the name this migration gives
-- another; it steps aside first.
ALTER TABLE users RENAME CONSTRAINT users_email_key TO users_email_unique;

-- E-mail addresses are unique by their Unicode case-folded form, not by
-- SQLite's ASCII-only NOCASE: email_key is filled from email by the Go part
-- of this migration (store/email.go, keyEmails), and by every write of an
-- address after it. NULL only for an address that clashed with an older
-- account's when this migration ran.
ALTER TABLE users ADD COLUMN email_key TEXT;
CREATE UNIQUE INDEX users_email_key ON users (email_key);

-- Recovery codes are stored as HMAC-SHA256 under a key derived from
-- secret.key (keyed = 1); before, as a plain SHA-256 (keyed = 0). Rows of
-- the old kind are rewritten by the account service at start, hourly and
-- before a recovery code is checked (store.DB.KeyRecoveryCodes): the key is
-- not the database's to know.
ALTER TABLE recovery_codes ADD COLUMN keyed INTEGER NOT NULL DEFAULT 0 CHECK (keyed IN (0, 1));
