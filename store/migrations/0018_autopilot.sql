-- AutoPilot (issue 14): per environment, the pipeline that takes the next
-- keyword of an active campaign, generates its article, makes the post and
-- publishes it or leaves it a draft, within the limits its config sets.

-- One row per environment whose autopilot was ever configured or started;
-- an environment without one has the defaults and is stopped.
--
-- state is what the owner asked for (running, paused, stopped), or paused
-- by the autopilot itself: pause_reason says why (manual, daily_budget,
-- monthly_budget, daily_limit, failures) and resume_at, when set, is when
-- it resumes by itself (a budget or limit pause with auto_resume on).
-- The window is minutes after midnight in the environment's time zone,
-- [window_start, window_end); an end before the start spans midnight.
-- Budgets are in US dollars over every usage event of the environment,
-- NULL for none. post_status 'campaign' takes each campaign's own.
-- variables are values given to every generation (audience, say), beside
-- those the keyword gives. failures counts failed runs in a row.
-- idle_until and note say when the scheduler looks again after it found
-- nothing to do, and why.
CREATE TABLE autopilots (
    environment_id     INTEGER PRIMARY KEY REFERENCES environments (id) ON DELETE CASCADE,
    state              TEXT    NOT NULL DEFAULT 'stopped' CHECK (state IN ('stopped', 'running', 'paused')),
    pause_reason       TEXT    NOT NULL DEFAULT '' CHECK (pause_reason IN ('', 'manual', 'daily_budget', 'monthly_budget', 'daily_limit', 'failures')),
    pause_detail       TEXT    NOT NULL DEFAULT '',
    resume_at          TEXT,
    window_start       INTEGER NOT NULL DEFAULT 0 CHECK (window_start BETWEEN 0 AND 1439),
    window_end         INTEGER NOT NULL DEFAULT 1440 CHECK (window_end BETWEEN 1 AND 1440),
    max_posts_per_day  INTEGER NOT NULL DEFAULT 1 CHECK (max_posts_per_day BETWEEN 1 AND 100),
    daily_budget_usd   REAL    CHECK (daily_budget_usd > 0),
    monthly_budget_usd REAL    CHECK (monthly_budget_usd > 0),
    post_status        TEXT    NOT NULL DEFAULT 'campaign' CHECK (post_status IN ('campaign', 'draft', 'publish')),
    auto_resume        INTEGER NOT NULL DEFAULT 1 CHECK (auto_resume IN (0, 1)),
    variables          TEXT    NOT NULL DEFAULT '{}',
    failures           INTEGER NOT NULL DEFAULT 0,
    idle_until         TEXT,
    note               TEXT    NOT NULL DEFAULT '',
    changed_by         INTEGER REFERENCES users (id) ON DELETE SET NULL,
    state_changed_at   TEXT,
    updated_at         TEXT    NOT NULL
);
-- The scheduler reads the running and paused ones.
CREATE INDEX autopilots_state ON autopilots (state);

-- The campaigns an autopilot works on, in its order; none listed means
-- every active campaign of the environment.
CREATE TABLE autopilot_campaigns (
    environment_id INTEGER NOT NULL REFERENCES autopilots (environment_id) ON DELETE CASCADE,
    campaign_id    INTEGER NOT NULL REFERENCES seo_campaigns (id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    PRIMARY KEY (environment_id, campaign_id)
) WITHOUT ROWID;
CREATE INDEX autopilot_campaigns_campaign ON autopilot_campaigns (campaign_id);

-- One keyword taken through the steps. The keyword is claimed when the
-- run is made (its pick_keyword step), so a run always has one; keyword
-- keeps its text and keyword_status what it was before the claim (put
-- back when the run ends without a post). target and post_status are
-- decided then too. The generation (cie_run_id) and the post are linked
-- as their steps make them, which is what lets a run that is run again
-- after a restart find them instead of making them twice.
--
-- control is what the owner asked of a run under way (pause, stop), which
-- it does at its next step. At most one run of an environment is active
-- (queued, running or paused) at a time.
CREATE TABLE autopilot_runs (
    id                INTEGER PRIMARY KEY,
    environment_id    INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    trigger           TEXT    NOT NULL CHECK (trigger IN ('schedule', 'manual')),
    status            TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'succeeded', 'failed', 'cancelled')),
    control           TEXT    NOT NULL DEFAULT '' CHECK (control IN ('', 'pause', 'stop')),
    campaign_id       INTEGER REFERENCES seo_campaigns (id) ON DELETE SET NULL,
    keyword_id        INTEGER REFERENCES seo_keywords (id) ON DELETE SET NULL,
    keyword           TEXT    NOT NULL,
    keyword_status    TEXT    NOT NULL CHECK (keyword_status IN ('new', 'planned')),
    target            TEXT    NOT NULL CHECK (target IN ('wordpress', 'astro')),
    post_status       TEXT    NOT NULL CHECK (post_status IN ('draft', 'publish')),
    cie_run_id        INTEGER REFERENCES cie_runs (id) ON DELETE SET NULL,
    wordpress_post_id INTEGER REFERENCES wordpress_posts (id) ON DELETE SET NULL,
    astro_post_id     INTEGER REFERENCES astro_posts (id) ON DELETE SET NULL,
    job_id            INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    pause_reason      TEXT    NOT NULL DEFAULT '',
    error             TEXT    NOT NULL DEFAULT '',
    requested_by      INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at        TEXT    NOT NULL,
    started_at        TEXT,
    finished_at       TEXT,
    CHECK (wordpress_post_id IS NULL OR astro_post_id IS NULL)
);
-- The list of an environment, newest first, and by status; the day's
-- count of an environment and of a campaign.
CREATE INDEX autopilot_runs_env ON autopilot_runs (environment_id, created_at, id);
CREATE INDEX autopilot_runs_env_status ON autopilot_runs (environment_id, status, created_at, id);
CREATE INDEX autopilot_runs_campaign ON autopilot_runs (campaign_id, created_at) WHERE campaign_id IS NOT NULL;
CREATE UNIQUE INDEX autopilot_runs_active ON autopilot_runs (environment_id) WHERE status IN ('queued', 'running', 'paused');
-- For the SET NULLs when what a run links goes.
CREATE INDEX autopilot_runs_keyword ON autopilot_runs (keyword_id) WHERE keyword_id IS NOT NULL;
CREATE INDEX autopilot_runs_cie_run ON autopilot_runs (cie_run_id) WHERE cie_run_id IS NOT NULL;
CREATE INDEX autopilot_runs_wordpress_post ON autopilot_runs (wordpress_post_id) WHERE wordpress_post_id IS NOT NULL;
CREATE INDEX autopilot_runs_astro_post ON autopilot_runs (astro_post_id) WHERE astro_post_id IS NOT NULL;
CREATE INDEX autopilot_runs_job ON autopilot_runs (job_id) WHERE job_id IS NOT NULL;

-- A run's steps: pick_keyword, generate, create_post, publish, in that
-- order; a step not begun has no row. Each is written when it begins and
-- when it ends, before the next begins. attempts counts its beginnings
-- (a retry, a restart); the usage is the generation's.
CREATE TABLE autopilot_steps (
    run_id        INTEGER NOT NULL REFERENCES autopilot_runs (id) ON DELETE CASCADE,
    step          TEXT    NOT NULL CHECK (step IN ('pick_keyword', 'generate', 'create_post', 'publish')),
    status        TEXT    NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'skipped')),
    detail        TEXT    NOT NULL DEFAULT '',
    error         TEXT    NOT NULL DEFAULT '',
    attempts      INTEGER NOT NULL DEFAULT 1,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL,
    started_at    TEXT    NOT NULL,
    finished_at   TEXT,
    PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
