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
    current_message_id INTEGER REFERENCES chat_messages (id) ON DELETE SET NULL,
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

-- Search by title and message text: two FTS5 indexes over the tables'
-- own text (external content), kept in step by the triggers below, which
-- also fire for the rows a cascade deletes.
CREATE VIRTUAL TABLE chat_title_search USING fts5 (title, content = 'chat_conversations', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE chat_message_search USING fts5 (content, content = 'chat_messages', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER chat_conversations_search_insert AFTER INSERT ON chat_conversations BEGIN
    INSERT INTO chat_title_search (rowid, title) VALUES (new.id, new.title);
END;
CREATE TRIGGER chat_conversations_search_delete AFTER DELETE ON chat_conversations BEGIN
    INSERT INTO chat_title_search (chat_title_search, rowid, title) VALUES ('delete', old.id, old.title);
END;
CREATE TRIGGER chat_conversations_search_update AFTER UPDATE OF title ON chat_conversations BEGIN
    INSERT INTO chat_title_search (chat_title_search, rowid, title) VALUES ('delete', old.id, old.title);
    INSERT INTO chat_title_search (rowid, title) VALUES (new.id, new.title);
END;

CREATE TRIGGER chat_messages_search_insert AFTER INSERT ON chat_messages BEGIN
    INSERT INTO chat_message_search (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER chat_messages_search_delete AFTER DELETE ON chat_messages BEGIN
    INSERT INTO chat_message_search (chat_message_search, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER chat_messages_search_update AFTER UPDATE OF content ON chat_messages BEGIN
    INSERT INTO chat_message_search (chat_message_search, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO chat_message_search (rowid, content) VALUES (new.id, new.content);
END;
