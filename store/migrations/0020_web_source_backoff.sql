-- Back-off of failing web sources: how many fetches in a row have failed
-- (0 after any success, a 304 included). The service spaces the next
-- fetch by it (interval × 2^n, capped) and tells the environment's
-- editors when it reaches its threshold.
ALTER TABLE web_sources ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0);
-- The list's failing filter (consecutive_failures > 0, or = 0) and its
-- count, over every environment the scope sees.
CREATE INDEX web_sources_failures ON web_sources (consecutive_failures, environment_id);
