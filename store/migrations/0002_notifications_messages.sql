-- Notifications (raised by the system for one user) and direct messages.

CREATE TABLE notifications (
    id             INTEGER PRIMARY KEY,
    user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind           TEXT    NOT NULL,
    title          TEXT    NOT NULL,
    body           TEXT    NOT NULL DEFAULT '',
    link           TEXT,
    -- The environment it is about; kept as history when that is deleted.
    environment_id INTEGER REFERENCES environments (id) ON DELETE SET NULL,
    read_at        TEXT,
    created_at     TEXT    NOT NULL
);
CREATE INDEX notifications_user ON notifications (user_id, id);
CREATE INDEX notifications_unread ON notifications (user_id, id) WHERE read_at IS NULL;
CREATE INDEX notifications_read_at ON notifications (read_at) WHERE read_at IS NOT NULL;

-- A message is kept once; each side deletes it for itself.
CREATE TABLE messages (
    id                   INTEGER PRIMARY KEY,
    sender_id            INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    recipient_id         INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The pair of users, lower id first, for conversation lookups.
    pair_lo              INTEGER NOT NULL,
    pair_hi              INTEGER NOT NULL,
    subject              TEXT    NOT NULL DEFAULT '',
    body                 TEXT    NOT NULL,
    read_at              TEXT,
    sender_deleted_at    TEXT,
    recipient_deleted_at TEXT,
    created_at           TEXT    NOT NULL,
    CHECK (sender_id <> recipient_id),
    CHECK (pair_lo = MIN(sender_id, recipient_id) AND pair_hi = MAX(sender_id, recipient_id))
);
CREATE INDEX messages_inbox ON messages (recipient_id, id) WHERE recipient_deleted_at IS NULL;
CREATE INDEX messages_inbox_unread ON messages (recipient_id, id) WHERE recipient_deleted_at IS NULL AND read_at IS NULL;
CREATE INDEX messages_sent ON messages (sender_id, id) WHERE sender_deleted_at IS NULL;
CREATE INDEX messages_pair ON messages (pair_lo, pair_hi, id);
