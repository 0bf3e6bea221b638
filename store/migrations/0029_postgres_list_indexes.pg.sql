-- PostgreSQL text of 0029_postgres_list_indexes.sql (on SQLite only the three new indexes):
-- the indexes of a list's order made to serve that order on PostgreSQL
-- too, so that a page walks an index and stops when it is full
-- (TestListQueryPlansPostgres). Two things differ from SQLite:
--
--   - A SQLite index ends with the rowid (the id), so an index on
--     (user_id, created_at) serves ORDER BY created_at, id. PostgreSQL's
--     does not: the id is written out. Where the index is UNIQUE on the
--     columns before it, a second index holds the id (a unique index on
--     more columns would no longer say the same thing).
--   - NULL sorts first going up and last going down on SQLite; the store
--     keeps that order on PostgreSQL (nullsAsSQLite adds NULLS FIRST or
--     NULLS LAST), which an index in PostgreSQL's default order (NULLS
--     LAST going up) cannot serve: a nullable column of an index that
--     orders a list is NULLS FIRST (read backwards: DESC NULLS LAST).

DROP INDEX chat_conversations_activity;
CREATE INDEX chat_conversations_activity ON chat_conversations (user_id, archived, activity_at, id);
DROP INDEX chat_conversations_created;
CREATE INDEX chat_conversations_created ON chat_conversations (user_id, archived, created_at, id);
DROP INDEX chat_conversations_title;
CREATE INDEX chat_conversations_title ON chat_conversations (user_id, archived, title COLLATE NOCASE, id);

DROP INDEX usage_events_time;
CREATE INDEX usage_events_time ON usage_events (created_at, id);

CREATE INDEX seo_keywords_key_list ON seo_keywords (environment_id, keyword_key, id);
CREATE INDEX search_ideas_key_list ON search_ideas (phrase_id, idea_key, id);
CREATE INDEX web_sources_url_env_list ON web_sources (environment_id, url, id);

DROP INDEX seo_keywords_cpc;
CREATE INDEX seo_keywords_cpc ON seo_keywords (environment_id, cpc NULLS FIRST, id);
DROP INDEX seo_keywords_difficulty;
CREATE INDEX seo_keywords_difficulty ON seo_keywords (environment_id, difficulty NULLS FIRST, id);
DROP INDEX seo_keywords_volume;
CREATE INDEX seo_keywords_volume ON seo_keywords (environment_id, search_volume NULLS FIRST, id);

DROP INDEX search_phrases_run;
CREATE INDEX search_phrases_run ON search_phrases (last_run_at NULLS FIRST, id, environment_id, is_active);

DROP INDEX web_items_published;
CREATE INDEX web_items_published ON web_items (source_id, published_at NULLS FIRST, id);

DROP INDEX web_sources_fetched;
CREATE INDEX web_sources_fetched ON web_sources (last_fetched_at NULLS FIRST, id, environment_id, is_active);
DROP INDEX web_sources_env_fetched;
CREATE INDEX web_sources_env_fetched ON web_sources (environment_id, last_fetched_at NULLS FIRST, id, is_active);
