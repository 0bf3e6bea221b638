-- Scout runs and strategies (issue 14). They read keywords, campaigns,
-- search ideas and web items (migrations 0016, 0017) and change none of
-- those tables' columns.

-- A scout run gathers candidate keywords for one environment on the job
-- runner. seeds are the phrases it asked SerpApi and the model about
-- (given, or the environment's active search phrases), sources what it was
-- asked to read (JSON arrays). notes name each source that was skipped or
-- failed; gathered counts the distinct candidates found, known those
-- dropped because the environment had them as keywords already.
CREATE TABLE seo_scout_runs (
    id              INTEGER PRIMARY KEY,
    environment_id  INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    user_id         INTEGER REFERENCES users (id) ON DELETE SET NULL,
    job_id          INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    status          TEXT    NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    seeds           TEXT    NOT NULL DEFAULT '[]',
    sources         TEXT    NOT NULL DEFAULT '[]',
    notes           TEXT    NOT NULL DEFAULT '',
    error           TEXT    NOT NULL DEFAULT '',
    gathered        INTEGER NOT NULL DEFAULT 0,
    known           INTEGER NOT NULL DEFAULT 0,
    candidate_count INTEGER NOT NULL DEFAULT 0,
    accepted_count  INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT    NOT NULL,
    started_at      TEXT,
    finished_at     TEXT
);
-- The list in each order it sorts by (created_at, candidate_count), over
-- every environment the scope sees and within one, and the count of a
-- status.
CREATE INDEX seo_scout_runs_created ON seo_scout_runs (created_at, id, environment_id, status);
CREATE INDEX seo_scout_runs_env_created ON seo_scout_runs (environment_id, created_at, id, status);
CREATE INDEX seo_scout_runs_candidates ON seo_scout_runs (candidate_count, id, environment_id, status);
CREATE INDEX seo_scout_runs_env_candidates ON seo_scout_runs (environment_id, candidate_count, id, status);
CREATE INDEX seo_scout_runs_status ON seo_scout_runs (status, environment_id);
CREATE INDEX seo_scout_runs_job ON seo_scout_runs (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX seo_scout_runs_user ON seo_scout_runs (user_id) WHERE user_id IS NOT NULL;

-- A candidate of a run: once per run by keyword_key (store.KeywordKey, the
-- keywords' own normal form), with the sources that found it (found_by, a
-- JSON array), the intents the model estimated (bits as in seo_keywords)
-- and its score. Accepting it makes a keyword (status accepted, keyword_id)
-- unless the environment has that keyword by then (status exists).
CREATE TABLE seo_scout_candidates (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES seo_scout_runs (id) ON DELETE CASCADE,
    keyword     TEXT    NOT NULL,
    keyword_key TEXT    NOT NULL,
    found_by    TEXT    NOT NULL DEFAULT '[]',
    intent      INTEGER NOT NULL DEFAULT 0 CHECK (intent BETWEEN 0 AND 15),
    score       INTEGER NOT NULL CHECK (score BETWEEN 0 AND 100),
    status      TEXT    NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'accepted', 'exists')),
    keyword_id  INTEGER REFERENCES seo_keywords (id) ON DELETE SET NULL
);
CREATE UNIQUE INDEX seo_scout_candidates_key ON seo_scout_candidates (run_id, keyword_key);
-- A run's candidates as GET shows them: best first.
CREATE INDEX seo_scout_candidates_score ON seo_scout_candidates (run_id, score DESC, keyword_key);
CREATE INDEX seo_scout_candidates_keyword ON seo_scout_candidates (keyword_id) WHERE keyword_id IS NOT NULL;

-- The top-10 organic result URLs of a keyword, as SerpApi last gave them
-- (urls, a JSON array in rank order), for SERP-overlap clustering.
-- keyword_key is the key they were fetched for: a keyword renamed since
-- has no SERP data until it is fetched again.
CREATE TABLE seo_keyword_serps (
    keyword_id  INTEGER PRIMARY KEY REFERENCES seo_keywords (id) ON DELETE CASCADE,
    keyword_key TEXT    NOT NULL,
    urls        TEXT    NOT NULL,
    fetched_at  TEXT    NOT NULL
);

-- A strategy groups some of an environment's keywords into clusters, each
-- a pillar page and its cluster pages. method is what was asked (auto,
-- serp, lexical), used_method what the build did; min_shared is the SERP
-- overlap threshold (shared top-10 URLs), similarity the lexical one
-- (Jaccard), refine whether the model names and refines the clusters.
-- keyword_ids is the JSON array of the keywords asked for, or null for
-- the environment's keywords. A strategy is built on the job runner
-- (status queued, running, then ready or failed); campaign_id is the last
-- campaign made from it.
CREATE TABLE seo_strategies (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    method         TEXT    NOT NULL CHECK (method IN ('auto', 'serp', 'lexical')),
    used_method    TEXT    NOT NULL DEFAULT '' CHECK (used_method IN ('', 'serp', 'lexical')),
    min_shared     INTEGER NOT NULL CHECK (min_shared BETWEEN 1 AND 10),
    similarity     REAL    NOT NULL CHECK (similarity > 0 AND similarity <= 1),
    refine         INTEGER NOT NULL DEFAULT 0 CHECK (refine IN (0, 1)),
    refresh_serp   INTEGER NOT NULL DEFAULT 0 CHECK (refresh_serp IN (0, 1)),
    keyword_ids    TEXT,
    status         TEXT    NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'ready', 'failed', 'cancelled')),
    job_id         INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    notes          TEXT    NOT NULL DEFAULT '',
    error          TEXT    NOT NULL DEFAULT '',
    keyword_count  INTEGER NOT NULL DEFAULT 0,
    cluster_count  INTEGER NOT NULL DEFAULT 0,
    campaign_id    INTEGER REFERENCES seo_campaigns (id) ON DELETE SET NULL,
    created_by     INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    built_at       TEXT
);
CREATE INDEX seo_strategies_name ON seo_strategies (name COLLATE NOCASE, id, environment_id, status);
CREATE INDEX seo_strategies_env_name ON seo_strategies (environment_id, name COLLATE NOCASE, id, status);
CREATE INDEX seo_strategies_created ON seo_strategies (created_at, id, environment_id, status);
CREATE INDEX seo_strategies_env_created ON seo_strategies (environment_id, created_at, id, status);
CREATE INDEX seo_strategies_updated ON seo_strategies (updated_at, id, environment_id, status);
CREATE INDEX seo_strategies_env_updated ON seo_strategies (environment_id, updated_at, id, status);
CREATE INDEX seo_strategies_status ON seo_strategies (status, environment_id);
CREATE INDEX seo_strategies_job ON seo_strategies (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX seo_strategies_campaign ON seo_strategies (campaign_id) WHERE campaign_id IS NOT NULL;
CREATE INDEX seo_strategies_user ON seo_strategies (created_by) WHERE created_by IS NOT NULL;

-- A cluster of a strategy, at position in its order: a pillar keyword
-- (null once that keyword is deleted) and its member keywords.
CREATE TABLE seo_strategy_clusters (
    id                INTEGER PRIMARY KEY,
    strategy_id       INTEGER NOT NULL REFERENCES seo_strategies (id) ON DELETE CASCADE,
    position          INTEGER NOT NULL,
    name              TEXT    NOT NULL,
    pillar_keyword_id INTEGER REFERENCES seo_keywords (id) ON DELETE SET NULL
);
CREATE INDEX seo_strategy_clusters_strategy ON seo_strategy_clusters (strategy_id, position, id);
CREATE INDEX seo_strategy_clusters_pillar ON seo_strategy_clusters (pillar_keyword_id) WHERE pillar_keyword_id IS NOT NULL;

-- The keywords of a strategy: each in one of its clusters, at position
-- (the pillar first). A deleted keyword leaves the strategy.
CREATE TABLE seo_strategy_keywords (
    strategy_id INTEGER NOT NULL REFERENCES seo_strategies (id) ON DELETE CASCADE,
    keyword_id  INTEGER NOT NULL REFERENCES seo_keywords (id) ON DELETE CASCADE,
    cluster_id  INTEGER NOT NULL REFERENCES seo_strategy_clusters (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    PRIMARY KEY (strategy_id, keyword_id)
) WITHOUT ROWID;
CREATE INDEX seo_strategy_keywords_cluster ON seo_strategy_keywords (cluster_id, position);
CREATE INDEX seo_strategy_keywords_keyword ON seo_strategy_keywords (keyword_id);
