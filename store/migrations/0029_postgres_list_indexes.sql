-- Nothing changes on SQLite: its indexes already serve every list (every
-- index ends with the rowid, the id, and NULL sorts first in both
-- directions of a scan). See 0029_postgres_list_indexes.pg.sql.
SELECT 1;
