-- E-mail addresses are unique by their Unicode case-folded form, not by
-- SQLite's ASCII-only NOCASE: email_key is filled from email by the Go part
-- of this migration (store/email.go, keyEmails), and by every write of an
-- address after it. NULL only for an address that clashed with an older
-- account's when this migration ran.
ALTER TABLE users ADD COLUMN email_key TEXT;
CREATE UNIQUE INDEX users_email_key ON users (email_key);
