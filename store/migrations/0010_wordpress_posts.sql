-- WordPress posts (issue 12): kept locally, published to the environment's
-- WordPress site. The sync state says what the site has: remote_id,
-- remote_link, remote_status (what WordPress answered, e.g. future for a
-- publish dated later), remote_modified (its modified_gmt at the last sync,
-- the basis of conflict detection), sync_status and last_error.
CREATE TABLE wordpress_posts (
    id                 INTEGER PRIMARY KEY,
    environment_id     INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    run_id             INTEGER REFERENCES agent_runs (id) ON DELETE SET NULL,
    created_by         INTEGER REFERENCES users (id) ON DELETE SET NULL,
    title              TEXT    NOT NULL,
    content            TEXT    NOT NULL DEFAULT '', -- Markdown, rendered to HTML when sent
    excerpt            TEXT    NOT NULL DEFAULT '',
    slug               TEXT    NOT NULL,
    status             TEXT    NOT NULL CHECK (status IN ('draft', 'pending', 'private', 'future', 'publish')),
    scheduled_at       TEXT,
    featured_image_url TEXT    NOT NULL DEFAULT '',
    featured_media_id  INTEGER, -- the upload of featured_media_src
    featured_media_src TEXT    NOT NULL DEFAULT '',
    remote_id          INTEGER,
    remote_link        TEXT    NOT NULL DEFAULT '',
    remote_status      TEXT    NOT NULL DEFAULT '',
    remote_modified    TEXT,
    -- A create was sent and its outcome is unknown (no answer): the next
    -- attempt looks the slug up on the site before creating again.
    create_pending     INTEGER NOT NULL DEFAULT 0,
    sync_status        TEXT    NOT NULL DEFAULT 'local' CHECK (sync_status IN ('local', 'synced', 'dirty', 'failed')),
    last_error         TEXT    NOT NULL DEFAULT '',
    synced_at          TEXT,
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL
);
CREATE UNIQUE INDEX wordpress_posts_slug ON wordpress_posts (environment_id, slug);
CREATE UNIQUE INDEX wordpress_posts_remote ON wordpress_posts (environment_id, remote_id) WHERE remote_id IS NOT NULL;
-- The list, newest first, by environment, status or sync status; each
-- index holds the other filters' columns so counts read the index alone.
CREATE INDEX wordpress_posts_env ON wordpress_posts (environment_id, id, status, sync_status);
CREATE INDEX wordpress_posts_status ON wordpress_posts (status, id, environment_id, sync_status);
CREATE INDEX wordpress_posts_sync ON wordpress_posts (sync_status, id, environment_id, status);
CREATE INDEX wordpress_posts_run ON wordpress_posts (run_id);

CREATE TABLE wordpress_post_categories (
    post_id     INTEGER NOT NULL REFERENCES wordpress_posts (id) ON DELETE CASCADE,
    category_id INTEGER NOT NULL REFERENCES cms_categories (id) ON DELETE CASCADE,
    PRIMARY KEY (post_id, category_id)
) WITHOUT ROWID;
CREATE INDEX wordpress_post_categories_category ON wordpress_post_categories (category_id, post_id);

CREATE TABLE wordpress_post_tags (
    post_id INTEGER NOT NULL REFERENCES wordpress_posts (id) ON DELETE CASCADE,
    tag_id  INTEGER NOT NULL REFERENCES cms_tags (id) ON DELETE CASCADE,
    PRIMARY KEY (post_id, tag_id)
) WITHOUT ROWID;
CREATE INDEX wordpress_post_tags_tag ON wordpress_post_tags (tag_id, post_id);
