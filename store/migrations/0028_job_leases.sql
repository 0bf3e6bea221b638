-- Jobs claimed under a lease (docs/scaling.md): a running job records the
-- instance that holds it (lease_owner, a name the runner makes when it
-- starts) and until when (lease_until). A live runner renews the leases of
-- the jobs it runs; on a shared database another instance takes over only
-- a running job whose lease has expired. Both are empty on jobs that are
-- not running.
ALTER TABLE jobs ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN lease_until TEXT;
