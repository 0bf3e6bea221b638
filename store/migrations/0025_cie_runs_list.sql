-- Generations are listed (GET /api/cie/runs) newest first, by environment,
-- archetype or status. The environment and archetype indexes of 0012 serve
-- those orders; a status needs its own, holding the scope column so a
-- count by status reads the index alone.
CREATE INDEX cie_runs_status ON cie_runs (status, id, environment_id);
