-- Mark the file as a copydesk database ("CPDS"), so a backup check can
-- tell it from any other SQLite file.
PRAGMA application_id = 1129333843;

-- A random nonce per session, carried in its tokens: session ids can be
-- reused (after a restore, or once old rows are pruned), nonces cannot.
ALTER TABLE sessions ADD COLUMN nonce TEXT NOT NULL DEFAULT '';
