-- Live agent sessions: an agent bound to an environment, where editors ask
-- for generations that everyone who sees the environment can watch as they
-- are written. A session outlives its agent (agent_id NULL: its transcript
-- stays readable, and it cannot generate any more).
CREATE TABLE live_sessions (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    agent_id       INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    title          TEXT    NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN ('open', 'closed')),
    created_by     INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    closed_at      TEXT
);
-- The list, newest first: by environment (and the tenancy scope), by
-- status, each with the other column so either count reads its index alone;
-- and the same by last activity (sort=updated_at).
CREATE INDEX live_sessions_env ON live_sessions (environment_id, id, status);
CREATE INDEX live_sessions_status ON live_sessions (status, id, environment_id);
CREATE INDEX live_sessions_updated ON live_sessions (updated_at, id, environment_id, status);
CREATE INDEX live_sessions_env_updated ON live_sessions (environment_id, updated_at, id, status);
CREATE INDEX live_sessions_status_updated ON live_sessions (status, updated_at, id, environment_id);
-- For the SET NULL when an agent goes.
CREATE INDEX live_sessions_agent ON live_sessions (agent_id) WHERE agent_id IS NOT NULL;

-- A session's generations, in order: its transcript. Each is a prompt (with
-- the variables filled into it and into the agent's system prompt) and,
-- once it ends, its output, which a cancelled or cut-off generation keeps
-- as far as it got. Usage is the call's, also recorded in usage_events
-- with source live.
CREATE TABLE live_generations (
    id              INTEGER PRIMARY KEY,
    session_id      INTEGER NOT NULL REFERENCES live_sessions (id) ON DELETE CASCADE,
    user_id         INTEGER REFERENCES users (id) ON DELETE SET NULL,
    job_id          INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    prompt          TEXT    NOT NULL,
    variables       TEXT    NOT NULL DEFAULT '{}',
    status          TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    output          TEXT    NOT NULL DEFAULT '',
    error           TEXT    NOT NULL DEFAULT '',
    model           TEXT    NOT NULL DEFAULT '',
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    cost_usd        REAL,
    usage_estimated INTEGER NOT NULL DEFAULT 0 CHECK (usage_estimated IN (0, 1)),
    history_dropped INTEGER NOT NULL DEFAULT 0,
    queued_at       TEXT    NOT NULL,
    started_at      TEXT,
    finished_at     TEXT
);
CREATE INDEX live_generations_session ON live_generations (session_id, id, status);
-- One generation at a time per session: a second one waiting or running
-- is refused by the database itself, whoever asks at the same moment.
CREATE UNIQUE INDEX live_generations_one_active ON live_generations (session_id) WHERE status IN ('queued', 'running');
CREATE INDEX live_generations_user ON live_generations (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX live_generations_job ON live_generations (job_id) WHERE job_id IS NOT NULL;

-- A post saved from a live session records the generation whose output it
-- holds, as one from an agent run records the run.
ALTER TABLE wordpress_posts ADD COLUMN live_generation_id INTEGER REFERENCES live_generations (id) ON DELETE SET NULL;
ALTER TABLE astro_posts ADD COLUMN live_generation_id INTEGER REFERENCES live_generations (id) ON DELETE SET NULL;
CREATE INDEX wordpress_posts_live_generation ON wordpress_posts (live_generation_id) WHERE live_generation_id IS NOT NULL;
CREATE INDEX astro_posts_live_generation ON astro_posts (live_generation_id) WHERE live_generation_id IS NOT NULL;
