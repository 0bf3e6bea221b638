-- The CMS taxonomy (issue 12): categories (with an optional parent) and
-- tags per environment, shared by both post kinds. A slug is unique within
-- its environment. The post kinds link to them in their own migrations.

CREATE TABLE cms_categories (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    -- A deleted parent leaves its children at the top.
    parent_id      INTEGER REFERENCES cms_categories (id) ON DELETE SET NULL,
    name           TEXT    NOT NULL,
    slug           TEXT    NOT NULL,
    description    TEXT    NOT NULL DEFAULT '',
    -- The term it is on the environment's WordPress site, once sent there
    -- or imported from there.
    wp_term_id     INTEGER,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);
CREATE UNIQUE INDEX cms_categories_slug ON cms_categories (environment_id, slug);
-- The list, by name: every category, or one environment's.
CREATE INDEX cms_categories_list ON cms_categories (name COLLATE NOCASE, id, environment_id);
CREATE INDEX cms_categories_env ON cms_categories (environment_id, name COLLATE NOCASE, id);
CREATE INDEX cms_categories_parent ON cms_categories (parent_id);

CREATE TABLE cms_tags (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    slug           TEXT    NOT NULL,
    wp_term_id     INTEGER,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);
CREATE UNIQUE INDEX cms_tags_slug ON cms_tags (environment_id, slug);
CREATE INDEX cms_tags_list ON cms_tags (name COLLATE NOCASE, id, environment_id);
CREATE INDEX cms_tags_env ON cms_tags (environment_id, name COLLATE NOCASE, id);
