-- The list indexes made to serve their orders on PostgreSQL too: see
-- 0029_postgres_list_indexes.pg.sql. SQLite's already do (every index
-- ends with the rowid, the id, and NULL sorts first in both directions of
-- a scan); it gets only the three new indexes' names, so that the two
-- engines' schemas keep the same objects (TestPostgresSchemaMatchesSQLite).
CREATE INDEX seo_keywords_key_list ON seo_keywords (environment_id, keyword_key, id);
CREATE INDEX search_ideas_key_list ON search_ideas (phrase_id, idea_key, id);
CREATE INDEX web_sources_url_env_list ON web_sources (environment_id, url, id);
