-- Watched search phrases: a phrase with a refresh_interval (seconds; 0,
-- the default, is on demand only) is run by the recurring job
-- search.schedule while active. next_run_at is when it is due: NULL while
-- inactive, without an interval, or while a run is queued or running (the
-- run's end sets it to that end + refresh_interval), so the schedule, its
-- minimum, never points at a phrase it cannot run. Phrases that exist
-- already get no interval: nothing starts spending search credits on an
-- upgrade.
ALTER TABLE search_phrases ADD COLUMN refresh_interval INTEGER NOT NULL DEFAULT 0 CHECK (refresh_interval >= 0);
ALTER TABLE search_phrases ADD COLUMN next_run_at TEXT;

-- The schedule (the earliest due) and the due phrases, as web_sources_due.
CREATE INDEX search_phrases_due ON search_phrases (is_active, next_run_at, id);
-- The runs queued or under way, counted by the scheduler, which lets only
-- a few be at once.
CREATE INDEX search_phrases_in_flight ON search_phrases (run_status) WHERE run_status IN ('queued', 'running');
