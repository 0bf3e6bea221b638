-- PostgreSQL text of 0014_openchat.sql (translated like every migration,
-- see store/postgres.go): PostgreSQL refuses a reference to a table not made
-- yet, so chat_conversations.current_message_id gets its reference once
-- chat_messages exists; and search is a tsvector column of each table with
-- a GIN index instead of FTS5 tables and their triggers.

-- OpenChat: conversations belong to their owner alone (user_id), in an
-- environment or none. agent_id gives the conversation an agent's system
-- prompt, credential and model; model, when set instead, picks a model
-- under the AI settings. current_message_id is the message the client
-- looks at: the conversation's active branch runs from the root through
-- it, then down through the newest replies (see server/chat). activity_at
-- is the last message's time, which the list is ordered by.
CREATE TABLE chat_conversations (
    id                 INTEGER PRIMARY KEY,
    user_id            INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment_id     INTEGER REFERENCES environments (id) ON DELETE CASCADE,
    agent_id           INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    model              TEXT    NOT NULL DEFAULT '',
    title              TEXT    NOT NULL DEFAULT '',
    archived           INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    pinned             INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    current_message_id INTEGER,
    activity_at        TEXT    NOT NULL,
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL
);
-- The owner's list: archived or not, pinned first, newest activity first;
-- environment_id makes the count of the tenancy filter read the index
-- alone.
CREATE INDEX chat_conversations_list ON chat_conversations (user_id, archived, pinned, activity_at, id, environment_id);
-- The orders sort= asks for, pinned or not.
CREATE INDEX chat_conversations_activity ON chat_conversations (user_id, archived, activity_at);
CREATE INDEX chat_conversations_created ON chat_conversations (user_id, archived, created_at);
CREATE INDEX chat_conversations_title ON chat_conversations (user_id, archived, title COLLATE NOCASE);
CREATE INDEX chat_conversations_env ON chat_conversations (environment_id) WHERE environment_id IS NOT NULL;
CREATE INDEX chat_conversations_agent ON chat_conversations (agent_id) WHERE agent_id IS NOT NULL;
CREATE INDEX chat_conversations_current ON chat_conversations (current_message_id) WHERE current_message_id IS NOT NULL;

-- Messages form a tree: parent_id is the message answered (a reply's
-- user message) or followed (a user message's previous reply); NULL for
-- the first message and its edits. A regenerated reply and an edited user
-- message are siblings of the ones they replace, which stay. A reply is
-- 'generating' while its job runs, then complete, incomplete (stopped, or
-- cut off with text) or failed. parent_id has no ON DELETE action: a
-- branch is deleted whole, in one statement (store.DeleteChatMessage).
CREATE TABLE chat_messages (
    id               INTEGER PRIMARY KEY,
    conversation_id  INTEGER NOT NULL REFERENCES chat_conversations (id) ON DELETE CASCADE,
    parent_id        INTEGER REFERENCES chat_messages (id),
    role             TEXT    NOT NULL CHECK (role IN ('user', 'assistant')),
    content          TEXT    NOT NULL DEFAULT '',
    status           TEXT    NOT NULL CHECK (status IN ('generating', 'complete', 'incomplete', 'failed')),
    error            TEXT    NOT NULL DEFAULT '',
    model            TEXT    NOT NULL DEFAULT '',
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    cost_usd         REAL,
    usage_estimated  INTEGER NOT NULL DEFAULT 0 CHECK (usage_estimated IN (0, 1)),
    trimmed_messages INTEGER NOT NULL DEFAULT 0,
    job_id           INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    created_at       TEXT    NOT NULL,
    finished_at      TEXT
);
-- The tree of a conversation in id order, read from the index alone.
CREATE INDEX chat_messages_tree ON chat_messages (conversation_id, id, parent_id);
CREATE INDEX chat_messages_parent ON chat_messages (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX chat_messages_job ON chat_messages (job_id) WHERE job_id IS NOT NULL;
-- One reply generating at a time per conversation.
CREATE UNIQUE INDEX chat_messages_generating ON chat_messages (conversation_id) WHERE status = 'generating';
ALTER TABLE chat_conversations ADD FOREIGN KEY (current_message_id) REFERENCES chat_messages (id) ON DELETE SET NULL;

-- Search by title and message text (store.Dialect.ChatSearch): words
-- lower-cased ('simple') and without their accents, as FTS5's
-- remove_diacritics, matched by prefix. unaccent is a trusted extension of
-- PostgreSQL's own (contrib): the database's owner may install it.
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE FUNCTION copydesk_unaccent(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    SET search_path FROM CURRENT AS $$ SELECT unaccent('unaccent', $1) $$;
ALTER TABLE chat_conversations ADD COLUMN title_search tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', copydesk_unaccent(title))) STORED;
ALTER TABLE chat_messages ADD COLUMN content_search tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', copydesk_unaccent(content))) STORED;
CREATE INDEX chat_conversations_search ON chat_conversations USING gin (title_search);
CREATE INDEX chat_messages_search ON chat_messages USING gin (content_search);
