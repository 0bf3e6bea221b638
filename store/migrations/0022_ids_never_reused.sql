-- No id is ever given twice. A rowid table without AUTOINCREMENT gives a new
-- row the largest id plus one, so deleting the newest row (a live session,
-- a post, a job) let the next one take its id, and old links and watchers
-- reached another resource. Every table whose key is `id INTEGER PRIMARY
-- KEY` is rebuilt with AUTOINCREMENT by the Go part of this migration
-- (store/ids.go, autoincrementIDs): the same columns, rows, indexes and
-- triggers. Ids deleted before this migration cannot be known any more;
-- from here on, none comes back.
SELECT 1;
