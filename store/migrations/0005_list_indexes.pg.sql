-- PostgreSQL text of 0005_list_indexes.sql (translated like every
-- migration, see store/postgres.go): the same indexes and table; booleans
-- counted as (x IS NULL)::int, and the triggers as PL/pgSQL functions.

-- Indexes for the lists. Each list reads its page by walking an index in
-- its ORDER BY (never by sorting every match), and counts its total from
-- an index alone (never from table rows). store/plan_internal_test.go
-- checks the plan of every list query against this rule.
--
-- An index that serves an order lists the order's columns first, then id
-- (so that ties come out by id), then the columns the lists filter on, so
-- that a filter is checked in the index and only the rows of the page are
-- read. An ORDER BY on name COLLATE NOCASE needs an index on the same
-- collation.

-- Agents, by name.
CREATE INDEX agents_list ON agents (name COLLATE NOCASE, id, environment_id, kind, is_active);
DROP INDEX agents_env;
CREATE INDEX agents_env ON agents (environment_id, kind, is_active);

-- Credentials, by name.
CREATE INDEX credentials_list ON credentials (name COLLATE NOCASE, id, provider, environment_id);
DROP INDEX credentials_env;
CREATE INDEX credentials_env ON credentials (environment_id, provider);

-- Environments, by name.
CREATE INDEX environments_list ON environments (name COLLATE NOCASE, id);

-- Users, by id.
DROP INDEX users_role;
CREATE INDEX users_role ON users (role, id, is_active);

-- Jobs, newest first, by kind or status.
CREATE INDEX jobs_kind ON jobs (kind, id, status);
CREATE INDEX jobs_status ON jobs (status, id, kind);

-- Runs, newest first, by agent or status. The tenancy scope (some
-- environments, or none and the caller's own) has no index of its own on
-- purpose: one would tempt SQLite to gather the scope's runs and sort them;
-- instead the page walks the runs newest first, and the count reads the
-- scope columns from either index here.
DROP INDEX agent_runs_agent;
CREATE INDEX agent_runs_agent ON agent_runs (agent_id, id, status, environment_id, user_id);
CREATE INDEX agent_runs_status ON agent_runs (status, id, agent_id, environment_id, user_id);

-- Usage events, newest first, by time range, user, environment, agent
-- (indexes of 0003), model, source or status. The tenancy scope is counted
-- from usage_events_env_time, which holds both its columns; its page walks
-- usage_events_time (see UsageFilter.listConds).
CREATE INDEX usage_events_model ON usage_events (model, created_at);
CREATE INDEX usage_events_source ON usage_events (source, created_at);
CREATE INDEX usage_events_status ON usage_events (status, created_at);
DROP INDEX usage_events_env_time;
CREATE INDEX usage_events_env_time ON usage_events (environment_id, created_at, id, user_id);

-- Notifications of a user: the unread ones with the column that makes
-- them unread, so counting them reads the index alone.
DROP INDEX notifications_unread;
CREATE INDEX notifications_unread ON notifications (user_id, id, read_at) WHERE read_at IS NULL;

-- Messages: the same for inbox, unread inbox, sent and one conversation.
DROP INDEX messages_inbox;
CREATE INDEX messages_inbox ON messages (recipient_id, id, recipient_deleted_at) WHERE recipient_deleted_at IS NULL;
DROP INDEX messages_inbox_unread;
CREATE INDEX messages_inbox_unread ON messages (recipient_id, id, recipient_deleted_at, read_at)
    WHERE recipient_deleted_at IS NULL AND read_at IS NULL;
DROP INDEX messages_sent;
CREATE INDEX messages_sent ON messages (sender_id, id, sender_deleted_at) WHERE sender_deleted_at IS NULL;
DROP INDEX messages_pair;
CREATE INDEX messages_pair ON messages (pair_lo, pair_hi, id, sender_id, sender_deleted_at, recipient_id, recipient_deleted_at);

-- A user's live sessions, newest first.
DROP INDEX sessions_user;
CREATE INDEX sessions_user ON sessions (user_id, revoked_at, id);

-- A user's conversations, the most recent first: one row per user and
-- counterpart they kept messages with, so the list reads a page of rows in
-- an index instead of grouping every message of the user and sorting the
-- groups. The triggers below keep it; a side that deleted a message never
-- gets it back, so they handle only the changes the store makes: a
-- message written, read, deleted for one side, or deleted.
CREATE TABLE conversations (
    user_id  INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    other_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    last_id  INTEGER NOT NULL, -- the newest message user_id kept
    total    INTEGER NOT NULL, -- messages user_id kept
    unread   INTEGER NOT NULL, -- of those, received and not read
    PRIMARY KEY (user_id, other_id)
) WITHOUT ROWID;
CREATE INDEX conversations_recent ON conversations (user_id, last_id);
CREATE INDEX conversations_other ON conversations (other_id);

INSERT INTO conversations (user_id, other_id, last_id, total, unread)
SELECT user_id, other_id, MAX(id), COUNT(*), SUM(unread) FROM (
    SELECT sender_id AS user_id, recipient_id AS other_id, id, 0 AS unread FROM messages WHERE sender_deleted_at IS NULL
    UNION ALL
    SELECT recipient_id, sender_id, id, (read_at IS NULL)::int FROM messages WHERE recipient_deleted_at IS NULL
) AS kept GROUP BY user_id, other_id;

CREATE FUNCTION conversations_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.sender_deleted_at IS NULL THEN
        INSERT INTO conversations AS c (user_id, other_id, last_id, total, unread)
            VALUES (NEW.sender_id, NEW.recipient_id, NEW.id, 1, 0)
            ON CONFLICT (user_id, other_id) DO UPDATE SET last_id = GREATEST(c.last_id, excluded.last_id), total = c.total + 1;
    END IF;
    IF NEW.recipient_deleted_at IS NULL THEN
        INSERT INTO conversations AS c (user_id, other_id, last_id, total, unread)
            VALUES (NEW.recipient_id, NEW.sender_id, NEW.id, 1, (NEW.read_at IS NULL)::int)
            ON CONFLICT (user_id, other_id) DO UPDATE SET last_id = GREATEST(c.last_id, excluded.last_id), total = c.total + 1,
                unread = c.unread + excluded.unread;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_written AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION conversations_written();

CREATE FUNCTION conversations_read() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET unread = unread + (NEW.read_at IS NULL)::int - (OLD.read_at IS NULL)::int
        WHERE user_id = NEW.recipient_id AND other_id = NEW.sender_id;
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_read AFTER UPDATE OF read_at ON messages FOR EACH ROW
WHEN (NEW.recipient_deleted_at IS NULL AND OLD.recipient_deleted_at IS NULL AND (OLD.read_at IS NULL) <> (NEW.read_at IS NULL))
EXECUTE FUNCTION conversations_read();

-- A side drops a message it kept: one fewer, and when it was the newest,
-- the newest of the rest (walking messages_pair back from the end).
CREATE FUNCTION conversations_sender_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET total = total - 1, last_id = CASE WHEN last_id <> OLD.id THEN last_id ELSE COALESCE((
            SELECT m.id FROM messages m WHERE m.pair_lo = OLD.pair_lo AND m.pair_hi = OLD.pair_hi
            AND ((m.sender_id = OLD.sender_id AND m.sender_deleted_at IS NULL) OR (m.recipient_id = OLD.sender_id AND m.recipient_deleted_at IS NULL))
            ORDER BY m.id DESC LIMIT 1), 0) END
        WHERE user_id = OLD.sender_id AND other_id = OLD.recipient_id;
    DELETE FROM conversations WHERE user_id = OLD.sender_id AND other_id = OLD.recipient_id AND total <= 0;
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_sender_deleted AFTER UPDATE OF sender_deleted_at ON messages FOR EACH ROW
WHEN (OLD.sender_deleted_at IS NULL AND NEW.sender_deleted_at IS NOT NULL)
EXECUTE FUNCTION conversations_sender_deleted();

CREATE FUNCTION conversations_recipient_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET total = total - 1, unread = unread - (OLD.read_at IS NULL)::int, last_id = CASE WHEN last_id <> OLD.id THEN last_id ELSE COALESCE((
            SELECT m.id FROM messages m WHERE m.pair_lo = OLD.pair_lo AND m.pair_hi = OLD.pair_hi
            AND ((m.sender_id = OLD.recipient_id AND m.sender_deleted_at IS NULL) OR (m.recipient_id = OLD.recipient_id AND m.recipient_deleted_at IS NULL))
            ORDER BY m.id DESC LIMIT 1), 0) END
        WHERE user_id = OLD.recipient_id AND other_id = OLD.sender_id;
    DELETE FROM conversations WHERE user_id = OLD.recipient_id AND other_id = OLD.sender_id AND total <= 0;
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_recipient_deleted AFTER UPDATE OF recipient_deleted_at ON messages FOR EACH ROW
WHEN (OLD.recipient_deleted_at IS NULL AND NEW.recipient_deleted_at IS NOT NULL)
EXECUTE FUNCTION conversations_recipient_deleted();

-- A message deleted outright (by both sides, or with a user) while a side
-- still kept it.
CREATE FUNCTION conversations_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET total = total - 1, last_id = CASE WHEN last_id <> OLD.id THEN last_id ELSE COALESCE((
            SELECT m.id FROM messages m WHERE m.pair_lo = OLD.pair_lo AND m.pair_hi = OLD.pair_hi
            AND ((m.sender_id = OLD.sender_id AND m.sender_deleted_at IS NULL) OR (m.recipient_id = OLD.sender_id AND m.recipient_deleted_at IS NULL))
            ORDER BY m.id DESC LIMIT 1), 0) END
        WHERE OLD.sender_deleted_at IS NULL AND user_id = OLD.sender_id AND other_id = OLD.recipient_id;
    UPDATE conversations SET total = total - 1, unread = unread - (OLD.read_at IS NULL)::int, last_id = CASE WHEN last_id <> OLD.id THEN last_id ELSE COALESCE((
            SELECT m.id FROM messages m WHERE m.pair_lo = OLD.pair_lo AND m.pair_hi = OLD.pair_hi
            AND ((m.sender_id = OLD.recipient_id AND m.sender_deleted_at IS NULL) OR (m.recipient_id = OLD.recipient_id AND m.recipient_deleted_at IS NULL))
            ORDER BY m.id DESC LIMIT 1), 0) END
        WHERE OLD.recipient_deleted_at IS NULL AND user_id = OLD.recipient_id AND other_id = OLD.sender_id;
    DELETE FROM conversations WHERE total <= 0 AND user_id IN (OLD.sender_id, OLD.recipient_id)
        AND other_id IN (OLD.sender_id, OLD.recipient_id);
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_deleted AFTER DELETE ON messages FOR EACH ROW
WHEN (OLD.sender_deleted_at IS NULL OR OLD.recipient_deleted_at IS NULL)
EXECUTE FUNCTION conversations_deleted();
