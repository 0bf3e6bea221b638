-- SEO intelligence (issue 14): keywords and campaigns, per environment.
-- The autopilot, scout and strategies build on these tables; they add
-- columns and tables of their own, and change nothing here.

-- A campaign is a set of an environment's keywords that the autopilot
-- turns into posts: with an agent and an archetype (either may be gone, and
-- the campaign then cannot be activated), a publishing target, the status
-- its posts get there, and a cadence in posts per day. Its keywords point
-- at it (seo_keywords.campaign_id); its progress is counted from them.
CREATE TABLE seo_campaigns (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    description    TEXT    NOT NULL DEFAULT '',
    archetype_id   INTEGER REFERENCES archetypes (id) ON DELETE SET NULL,
    -- An agent usable in the environment (its own, assigned to it, or
    -- global): SetAgentAssignments refuses to take the environment away
    -- from an agent while a campaign there has it.
    agent_id       INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    target         TEXT    NOT NULL CHECK (target IN ('wordpress', 'astro')),
    post_status    TEXT    NOT NULL DEFAULT 'draft' CHECK (post_status IN ('draft', 'publish')),
    cadence        INTEGER NOT NULL DEFAULT 1 CHECK (cadence BETWEEN 1 AND 100),
    status         TEXT    NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'paused', 'completed')),
    created_by     INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);
-- Names are unique in an environment, ignoring ASCII case. Every sortable
-- field (name, created_at, updated_at) has an index for one environment's
-- list and one for the list of all.
CREATE UNIQUE INDEX seo_campaigns_name ON seo_campaigns (environment_id, name COLLATE NOCASE);
CREATE INDEX seo_campaigns_list ON seo_campaigns (name COLLATE NOCASE, id, environment_id);
CREATE INDEX seo_campaigns_env_created ON seo_campaigns (environment_id, created_at, id);
CREATE INDEX seo_campaigns_created ON seo_campaigns (created_at, id, environment_id);
CREATE INDEX seo_campaigns_env_updated ON seo_campaigns (environment_id, updated_at, id);
CREATE INDEX seo_campaigns_updated ON seo_campaigns (updated_at, id, environment_id);
CREATE INDEX seo_campaigns_status ON seo_campaigns (status, environment_id);
CREATE INDEX seo_campaigns_agent ON seo_campaigns (agent_id, environment_id, status);
CREATE INDEX seo_campaigns_archetype ON seo_campaigns (archetype_id) WHERE archetype_id IS NOT NULL;

-- A keyword of an environment. keyword is the form it is shown in;
-- keyword_key the form it is compared in (store.KeywordKey: NFC, lower
-- case, single spaces), unique in the environment, so an import updates a
-- keyword rather than adding it twice.
--
-- search_volume is the monthly volume, or the low bound of a range
-- (Keyword Planner's "1K – 10K"), whose high bound is search_volume_high.
-- intent is a set of bits: 1 informational, 2 commercial, 4 transactional,
-- 8 navigational.
--
-- A keyword is in at most one campaign (campaign_id), at campaign_position
-- in the campaign's order: one keyword is one article, so two campaigns
-- never write for the same search. The autopilot claims the next keyword
-- of a campaign with one UPDATE (status new or planned -> in_progress, see
-- ClaimCampaignKeyword) and links the post it made: wordpress_post_id or
-- astro_post_id, at most one, unlinked by the foreign key when the post is
-- deleted. source says where it came from: manual, import:<tool>, scout.
CREATE TABLE seo_keywords (
    id                 INTEGER PRIMARY KEY,
    environment_id     INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    keyword            TEXT    NOT NULL,
    keyword_key        TEXT    NOT NULL,
    search_volume      INTEGER CHECK (search_volume >= 0),
    search_volume_high INTEGER CHECK (search_volume_high >= search_volume),
    difficulty         INTEGER CHECK (difficulty BETWEEN 0 AND 100),
    cpc                REAL    CHECK (cpc >= 0),
    currency           TEXT    NOT NULL DEFAULT '',
    intent             INTEGER NOT NULL DEFAULT 0 CHECK (intent BETWEEN 0 AND 15),
    status             TEXT    NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'planned', 'in_progress', 'published', 'ignored')),
    cluster            TEXT    NOT NULL DEFAULT '',
    parent_keyword     TEXT    NOT NULL DEFAULT '',
    target_url         TEXT    NOT NULL DEFAULT '',
    campaign_id        INTEGER REFERENCES seo_campaigns (id) ON DELETE SET NULL,
    campaign_position  INTEGER,
    wordpress_post_id  INTEGER REFERENCES wordpress_posts (id) ON DELETE SET NULL,
    astro_post_id      INTEGER REFERENCES astro_posts (id) ON DELETE SET NULL,
    source             TEXT    NOT NULL DEFAULT 'manual',
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL,
    CHECK (wordpress_post_id IS NULL OR astro_post_id IS NULL)
);
-- The list is always of one environment; each sortable field has its
-- index there, which also counts its range filter.
CREATE UNIQUE INDEX seo_keywords_key ON seo_keywords (environment_id, keyword_key);
CREATE INDEX seo_keywords_volume ON seo_keywords (environment_id, search_volume, id);
CREATE INDEX seo_keywords_difficulty ON seo_keywords (environment_id, difficulty, id);
CREATE INDEX seo_keywords_cpc ON seo_keywords (environment_id, cpc, id);
CREATE INDEX seo_keywords_created ON seo_keywords (environment_id, created_at, id);
CREATE INDEX seo_keywords_updated ON seo_keywords (environment_id, updated_at, id);
CREATE INDEX seo_keywords_status ON seo_keywords (environment_id, status, intent);
CREATE INDEX seo_keywords_cluster ON seo_keywords (environment_id, cluster);
-- A campaign's keywords: in its order (its list, the autopilot's next
-- one), and by status (its progress).
CREATE INDEX seo_keywords_campaign ON seo_keywords (campaign_id, campaign_position, id) WHERE campaign_id IS NOT NULL;
CREATE INDEX seo_keywords_campaign_status ON seo_keywords (campaign_id, status) WHERE campaign_id IS NOT NULL;
CREATE INDEX seo_keywords_wordpress_post ON seo_keywords (wordpress_post_id) WHERE wordpress_post_id IS NOT NULL;
CREATE INDEX seo_keywords_astro_post ON seo_keywords (astro_post_id) WHERE astro_post_id IS NOT NULL;
