-- A post saved from an archetype generation records it, as one saved from
-- an agent run records the run (run_id). NULL for every other post; a
-- generation that goes leaves its posts.
ALTER TABLE wordpress_posts ADD COLUMN cie_run_id INTEGER REFERENCES cie_runs (id) ON DELETE SET NULL;
ALTER TABLE astro_posts ADD COLUMN cie_run_id INTEGER REFERENCES cie_runs (id) ON DELETE SET NULL;
-- For the SET NULL when a generation goes.
CREATE INDEX wordpress_posts_cie_run ON wordpress_posts (cie_run_id) WHERE cie_run_id IS NOT NULL;
CREATE INDEX astro_posts_cie_run ON astro_posts (cie_run_id) WHERE cie_run_id IS NOT NULL;
