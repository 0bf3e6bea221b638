-- The remote post as last synced: a digest of its raw title and content.
-- WordPress's modified time has one-second resolution, so an edit on the
-- site within the second of the last sync left it unchanged and a sync
-- overwrote the edit; a differing digest is a remote change too. Empty
-- (posts synced before this) compares by modified alone until the next
-- sync records it.
ALTER TABLE wordpress_posts ADD COLUMN remote_hash TEXT NOT NULL DEFAULT '';
