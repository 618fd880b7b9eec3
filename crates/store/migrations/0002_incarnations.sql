-- 0002_incarnations: which process incarnation a session and an approval belong to, how an
-- instance ended, and approvals with their outcomes, so that a restart can bring every record
-- of a process that died without cleaning up to a terminal or recoverable state.

-- The name of the lock file the process holds while it lives (NULL for instances recorded
-- before this migration). A lock that can be taken means the process is gone.
ALTER TABLE instances ADD COLUMN lock_name TEXT;
-- When and how it ended: 'stopped' (its own orderly shutdown) or 'abandoned' (a later process
-- found it dead and reconciled its records). NULL while it runs.
ALTER TABLE instances ADD COLUMN ended_at INTEGER;
ALTER TABLE instances ADD COLUMN ended_how TEXT;

ALTER TABLE sessions ADD COLUMN instance INTEGER REFERENCES instances(id);

CREATE TABLE approvals (
    id           TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL,
    instance     INTEGER NOT NULL REFERENCES instances(id),
    run_id       TEXT NOT NULL,
    -- The action kind, the origin it reaches and its tier; never the text typed.
    action       TEXT NOT NULL,
    origin       TEXT NOT NULL,
    tier         TEXT NOT NULL,
    requested_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    -- NULL while pending: approve_once, approve_for_task, deny, withdrawn (its run, session or
    -- server ended) or abandoned (its server died; a restart found it).
    outcome      TEXT,
    decided_at   INTEGER
) STRICT;

CREATE INDEX approvals_pending_by_instance ON approvals(instance) WHERE outcome IS NULL;
CREATE INDEX approvals_by_session ON approvals(session_id, requested_at);
