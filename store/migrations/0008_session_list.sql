-- A user's live sessions, newest first, a page at a time
-- (GET /api/auth/sessions): with both expiries in the index, the count of
-- live sessions reads the index alone, like every other list's.
DROP INDEX sessions_user;
CREATE INDEX sessions_user ON sessions (user_id, revoked_at, id, token_expires_at, expires_at);
