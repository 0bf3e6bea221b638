-- Usage events: two more sources (cie for content intelligence, search for
-- the search issue) and the estimated flag of counts a cut-off stream did
-- not get from its provider. SQLite cannot change a CHECK, so the table is
-- rebuilt; nothing references it. Its indexes are those of migrations
-- 0003 and 0005, made again.
ALTER TABLE usage_events RENAME TO usage_events_old;
CREATE TABLE usage_events (
    id             INTEGER PRIMARY KEY,
    created_at     TEXT    NOT NULL,
    provider       TEXT    NOT NULL,
    model          TEXT    NOT NULL,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    cached_tokens  INTEGER NOT NULL DEFAULT 0,
    cost_usd       REAL,
    latency_ms     INTEGER NOT NULL DEFAULT 0,
    status         TEXT    NOT NULL CHECK (status IN ('ok', 'error')),
    error          TEXT    NOT NULL DEFAULT '',
    source         TEXT    NOT NULL CHECK (source IN ('execution', 'chat', 'live', 'scout', 'autopilot', 'cie', 'search', 'test')),
    user_id        INTEGER REFERENCES users (id) ON DELETE SET NULL,
    environment_id INTEGER REFERENCES environments (id) ON DELETE SET NULL,
    agent_id       INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    credential_id  INTEGER REFERENCES credentials (id) ON DELETE SET NULL,
    estimated      INTEGER NOT NULL DEFAULT 0 CHECK (estimated IN (0, 1))
);
INSERT INTO usage_events (id, created_at, provider, model, input_tokens, output_tokens, cached_tokens, cost_usd, latency_ms,
    status, error, source, user_id, environment_id, agent_id, credential_id)
    SELECT id, created_at, provider, model, input_tokens, output_tokens, cached_tokens, cost_usd, latency_ms,
    status, error, source, user_id, environment_id, agent_id, credential_id FROM usage_events_old;
DROP TABLE usage_events_old;
CREATE INDEX usage_events_time ON usage_events (created_at);
CREATE INDEX usage_events_env_time ON usage_events (environment_id, created_at, id, user_id);
CREATE INDEX usage_events_user_time ON usage_events (user_id, created_at);
CREATE INDEX usage_events_agent_time ON usage_events (agent_id, created_at);
CREATE INDEX usage_events_model ON usage_events (model, created_at);
CREATE INDEX usage_events_source ON usage_events (source, created_at);
CREATE INDEX usage_events_status ON usage_events (status, created_at);

-- Context windows by model, over the engine's built-in table, as price
-- overrides are over its prices.
ALTER TABLE ai_settings ADD COLUMN context_windows TEXT NOT NULL DEFAULT '{}';

-- Content intelligence: archetypes are article recipes, global
-- (environment_id NULL) or of one environment. builtin names the five that
-- ship with copydesk: global, read-only (the service refuses changes), and
-- made here, so that every database has them, a restored backup included.
CREATE TABLE archetypes (
    id                 INTEGER PRIMARY KEY,
    environment_id     INTEGER REFERENCES environments (id) ON DELETE CASCADE,
    builtin            TEXT UNIQUE,
    name               TEXT    NOT NULL,
    description        TEXT    NOT NULL DEFAULT '',
    outline            TEXT    NOT NULL DEFAULT '[]',
    prompt_template    TEXT    NOT NULL,
    optional_variables TEXT    NOT NULL DEFAULT '[]',
    target_words       INTEGER NOT NULL CHECK (target_words BETWEEN 50 AND 20000),
    tone               TEXT    NOT NULL DEFAULT '',
    created_by         INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL,
    CHECK (builtin IS NULL OR environment_id IS NULL)
);
-- The list: global ones and those of the caller's environments, by id.
CREATE INDEX archetypes_env ON archetypes (environment_id, id);

-- A generation from an archetype: its prompts as sent, the article parsed
-- from the answer (or the raw answer when it did not parse), and its usage
-- over every attempt. Not agent_runs: a generation needs no agent, and has
-- an article and prompts an agent run has not.
CREATE TABLE cie_runs (
    id              INTEGER PRIMARY KEY,
    archetype_id    INTEGER REFERENCES archetypes (id) ON DELETE SET NULL,
    agent_id        INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    environment_id  INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    user_id         INTEGER REFERENCES users (id) ON DELETE SET NULL,
    job_id          INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    variables       TEXT    NOT NULL DEFAULT '{}',
    system_prompt   TEXT    NOT NULL,
    user_prompt     TEXT    NOT NULL,
    stream          INTEGER NOT NULL DEFAULT 0 CHECK (stream IN (0, 1)),
    status          TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    title           TEXT    NOT NULL DEFAULT '',
    description     TEXT    NOT NULL DEFAULT '',
    body            TEXT    NOT NULL DEFAULT '',
    raw_output      TEXT    NOT NULL DEFAULT '',
    error           TEXT    NOT NULL DEFAULT '',
    attempts        INTEGER NOT NULL DEFAULT 0,
    model           TEXT    NOT NULL DEFAULT '',
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    cost_usd        REAL,
    usage_estimated INTEGER NOT NULL DEFAULT 0 CHECK (usage_estimated IN (0, 1)),
    queued_at       TEXT    NOT NULL,
    started_at      TEXT,
    finished_at     TEXT
);
CREATE INDEX cie_runs_env ON cie_runs (environment_id, id);
CREATE INDEX cie_runs_archetype ON cie_runs (archetype_id, id);
CREATE INDEX cie_runs_user ON cie_runs (user_id, id);

INSERT INTO archetypes (builtin, name, description, outline, prompt_template, optional_variables, target_words, tone, created_at, updated_at)
VALUES
('how-to', 'How-to guide', 'Step-by-step instructions that get the reader from a problem to a result.',
 '[{"heading":"Introduction","guidance":"Name the problem and the result the reader will have at the end; say what they need before starting."},{"heading":"Steps","guidance":"Numbered steps, one action each, in the order they are done; say what the reader should see after each."},{"heading":"Common mistakes","guidance":"The errors people make most often and how to avoid or fix them."},{"heading":"Conclusion","guidance":"Recap the result and suggest a next step."}]',
 'Write a how-to guide about "{{keyword}}" for {{audience}}. Use the keyword in the title and the first paragraph. {{notes}}',
 '["notes"]', 1500, 'helpful', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
('listicle', 'Listicle', 'A numbered list of items, each explained, around one keyword.',
 '[{"heading":"Introduction","guidance":"Say what the list is for and how the items were chosen."},{"heading":"The list","guidance":"Numbered items, each with a subheading and a short explanation with a concrete example."},{"heading":"Conclusion","guidance":"Which item suits whom, in two or three sentences."}]',
 'Write a list article about "{{keyword}}" for {{audience}}. Use the keyword in the title and the first paragraph. {{notes}}',
 '["notes"]', 1200, 'engaging', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
('comparison', 'Comparison', 'Two or more options compared on the criteria that matter to the reader.',
 '[{"heading":"Introduction","guidance":"Name the options and who is choosing between them."},{"heading":"Criteria","guidance":"The criteria that decide, and why they matter."},{"heading":"Comparison","guidance":"Each criterion in turn for every option; include a Markdown table."},{"heading":"Verdict","guidance":"Which option to choose in which situation; no false balance."}]',
 'Write a comparison article about "{{keyword}}" for {{audience}}. Use the keyword in the title and the first paragraph. {{notes}}',
 '["notes"]', 1800, 'objective', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
('review', 'Review', 'An assessment of one product or service from use, with a verdict.',
 '[{"heading":"Summary","guidance":"The verdict in two sentences, and who it is for."},{"heading":"What it is","guidance":"What the product does and what it costs."},{"heading":"Strengths","guidance":"What works well, with specifics."},{"heading":"Weaknesses","guidance":"What does not, with specifics."},{"heading":"Verdict","guidance":"Who should buy it, who should not, and the alternatives."}]',
 'Write a review of "{{keyword}}" for {{audience}}. Use the keyword in the title and the first paragraph. {{notes}}',
 '["notes"]', 1400, 'honest', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
('pillar-page', 'Pillar page', 'A long, complete overview of a topic that links out to narrower articles.',
 '[{"heading":"Introduction","guidance":"Define the topic and say what the page covers."},{"heading":"Fundamentals","guidance":"The concepts a newcomer needs, each briefly."},{"heading":"Subtopics","guidance":"One section per major subtopic, each a self-contained summary that a narrower article could expand."},{"heading":"Frequently asked questions","guidance":"Five to eight questions people search for, answered briefly."},{"heading":"Conclusion","guidance":"Recap and where to go next."}]',
 'Write a pillar page about "{{keyword}}" for {{audience}}. Use the keyword in the title and the first paragraph. {{notes}}',
 '["notes"]', 3500, 'authoritative', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
