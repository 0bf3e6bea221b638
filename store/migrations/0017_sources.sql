-- Search phrases and web sources (issue 14): what the scout reads besides
-- SERP data and the model.

-- A search phrase is a query to research in one environment and locale.
-- phrase_key is the phrase normalised (NFC, lower case, single spaces):
-- one phrase per environment and locale however it is typed. A run asks
-- SerpApi and the model for related queries, on the job runner; its state
-- is kept here (run_status, run_job_id), its findings in search_ideas.
CREATE TABLE search_phrases (
    id              INTEGER PRIMARY KEY,
    environment_id  INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    phrase          TEXT    NOT NULL,
    phrase_key      TEXT    NOT NULL,
    locale          TEXT    NOT NULL,
    is_active       INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    run_status      TEXT    NOT NULL DEFAULT 'idle' CHECK (run_status IN ('idle', 'queued', 'running', 'succeeded', 'failed', 'cancelled')),
    run_job_id      INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    last_run_at     TEXT,
    last_run_error  TEXT    NOT NULL DEFAULT '',
    last_run_ideas  INTEGER NOT NULL DEFAULT 0,
    created_by      INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
);
CREATE UNIQUE INDEX search_phrases_key ON search_phrases (environment_id, phrase_key, locale);
-- The list in each order it sorts by, over every environment the scope
-- sees and within one (sort=phrase, created_at, last_run_at), and the
-- count of is_active.
CREATE INDEX search_phrases_phrase ON search_phrases (phrase_key, id, environment_id, is_active);
CREATE INDEX search_phrases_env_phrase ON search_phrases (environment_id, phrase_key, id, is_active);
CREATE INDEX search_phrases_created ON search_phrases (created_at, id, environment_id, is_active);
CREATE INDEX search_phrases_env_created ON search_phrases (environment_id, created_at, id, is_active);
CREATE INDEX search_phrases_run ON search_phrases (last_run_at, id, environment_id, is_active);
CREATE INDEX search_phrases_env_run ON search_phrases (environment_id, last_run_at, id, is_active);
CREATE INDEX search_phrases_active ON search_phrases (is_active, environment_id);
CREATE INDEX search_phrases_job ON search_phrases (run_job_id) WHERE run_job_id IS NOT NULL;

-- An idea is a related query a run found for a phrase: once per phrase
-- (idea_key, normalised as phrase_key), with the source that found it
-- first (serp or ai) and how (related search, people also ask,
-- autocomplete, or related for the model's). environment_id is the
-- phrase's, so the scout reads an environment's ideas in one index walk.
CREATE TABLE search_ideas (
    id             INTEGER PRIMARY KEY,
    phrase_id      INTEGER NOT NULL REFERENCES search_phrases (id) ON DELETE CASCADE,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    idea           TEXT    NOT NULL,
    idea_key       TEXT    NOT NULL,
    source         TEXT    NOT NULL CHECK (source IN ('serp', 'ai')),
    kind           TEXT    NOT NULL CHECK (kind IN ('related', 'question', 'autocomplete')),
    created_at     TEXT    NOT NULL
);
CREATE UNIQUE INDEX search_ideas_key ON search_ideas (phrase_id, idea_key);
CREATE INDEX search_ideas_phrase_created ON search_ideas (phrase_id, created_at, id);
CREATE INDEX search_ideas_phrase_source ON search_ideas (phrase_id, source);
CREATE INDEX search_ideas_env ON search_ideas (environment_id, created_at, id);

-- A web source is a feed or a page one environment follows. It is fetched
-- every fetch_interval seconds while active (next_fetch_at, NULL when
-- inactive, is when: the recurring job's schedule is its minimum), with
-- the validators of the last answer (etag, last_modified) for a
-- conditional GET.
CREATE TABLE web_sources (
    id              INTEGER PRIMARY KEY,
    environment_id  INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    url             TEXT    NOT NULL,
    kind            TEXT    NOT NULL CHECK (kind IN ('rss', 'atom', 'page')),
    is_active       INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    fetch_interval  INTEGER NOT NULL CHECK (fetch_interval > 0),
    next_fetch_at   TEXT,
    last_fetched_at TEXT,
    last_status     INTEGER,
    last_error      TEXT    NOT NULL DEFAULT '',
    etag            TEXT    NOT NULL DEFAULT '',
    last_modified   TEXT    NOT NULL DEFAULT '',
    created_by      INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
);
CREATE UNIQUE INDEX web_sources_url_env ON web_sources (environment_id, url);
CREATE INDEX web_sources_url ON web_sources (url, id, environment_id, is_active);
CREATE INDEX web_sources_created ON web_sources (created_at, id, environment_id, is_active);
CREATE INDEX web_sources_env_created ON web_sources (environment_id, created_at, id, is_active);
CREATE INDEX web_sources_fetched ON web_sources (last_fetched_at, id, environment_id, is_active);
CREATE INDEX web_sources_env_fetched ON web_sources (environment_id, last_fetched_at, id, is_active);
-- The schedule (the earliest due) and the due sources; the count of
-- is_active.
CREATE INDEX web_sources_due ON web_sources (is_active, next_fetch_at, id);

-- An item of a web source: a feed entry, or a version of a page. Stored
-- once per source by item_key: the guid when the feed gives one, else the
-- link (a page's guid is a digest of its readable text, so a changed page
-- is a new item).
CREATE TABLE web_items (
    id             INTEGER PRIMARY KEY,
    source_id      INTEGER NOT NULL REFERENCES web_sources (id) ON DELETE CASCADE,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    item_key       TEXT    NOT NULL,
    guid           TEXT    NOT NULL DEFAULT '',
    link           TEXT    NOT NULL DEFAULT '',
    title          TEXT    NOT NULL DEFAULT '',
    summary        TEXT    NOT NULL DEFAULT '',
    content        TEXT    NOT NULL DEFAULT '',
    published_at   TEXT,
    created_at     TEXT    NOT NULL
);
CREATE UNIQUE INDEX web_items_key ON web_items (source_id, item_key);
CREATE INDEX web_items_published ON web_items (source_id, published_at, id);
CREATE INDEX web_items_created ON web_items (source_id, created_at, id);
CREATE INDEX web_items_env ON web_items (environment_id, created_at, id);
