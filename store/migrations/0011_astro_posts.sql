-- Astro posts (issue 12): Markdown posts written as files into an
-- environment's Astro content folder. The row is what copydesk knows; the
-- file is what the site builds. file_sha256 is the SHA-256 of the file as
-- copydesk last wrote or read it, render_sha256 that of the row's own
-- rendering at that moment: reconcile compares the file on disk with the
-- first and the row's rendering now with the second, so a file changed
-- outside copydesk, a database restored under newer files and a row whose
-- terms were renamed are each found.

CREATE TABLE astro_posts (
    id                 INTEGER PRIMARY KEY,
    environment_id     INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    title              TEXT    NOT NULL,
    description        TEXT    NOT NULL DEFAULT '',
    slug               TEXT    NOT NULL,
    -- The file is <slug>.<ext>: md, or mdx for an imported MDX file.
    ext                TEXT    NOT NULL DEFAULT 'md' CHECK (ext IN ('md', 'mdx')),
    body               TEXT    NOT NULL DEFAULT '',
    pub_date           TEXT    NOT NULL,
    updated_date       TEXT,
    hero_image         TEXT    NOT NULL DEFAULT '',
    draft              INTEGER NOT NULL DEFAULT 0,
    -- Front matter keys copydesk does not know, kept from an imported file
    -- as YAML and written back after its own.
    extra_front_matter TEXT    NOT NULL DEFAULT '',
    -- The agent run it was made from (save-as-post).
    run_id             INTEGER REFERENCES agent_runs (id) ON DELETE SET NULL,
    file_sha256        TEXT    NOT NULL DEFAULT '',
    render_sha256      TEXT    NOT NULL DEFAULT '',
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL
);
-- One slug per environment, and so one file name per content folder (two
-- environments may not share a folder).
CREATE UNIQUE INDEX astro_posts_slug ON astro_posts (environment_id, slug);
-- The list, newest first: every post, or one environment's; each carries
-- the columns the filters check, so counts read the index alone.
CREATE INDEX astro_posts_list ON astro_posts (pub_date DESC, id DESC, environment_id, draft);
CREATE INDEX astro_posts_env ON astro_posts (environment_id, pub_date DESC, id DESC, draft);
CREATE INDEX astro_posts_draft ON astro_posts (draft, environment_id);
CREATE INDEX astro_posts_run ON astro_posts (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE astro_post_categories (
    post_id     INTEGER NOT NULL REFERENCES astro_posts (id) ON DELETE CASCADE,
    category_id INTEGER NOT NULL REFERENCES cms_categories (id) ON DELETE CASCADE,
    PRIMARY KEY (post_id, category_id)
) WITHOUT ROWID;
CREATE INDEX astro_post_categories_category ON astro_post_categories (category_id, post_id);

CREATE TABLE astro_post_tags (
    post_id INTEGER NOT NULL REFERENCES astro_posts (id) ON DELETE CASCADE,
    tag_id  INTEGER NOT NULL REFERENCES cms_tags (id) ON DELETE CASCADE,
    PRIMARY KEY (post_id, tag_id)
) WITHOUT ROWID;
CREATE INDEX astro_post_tags_tag ON astro_post_tags (tag_id, post_id);
