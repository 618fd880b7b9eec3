-- 0002_incarnations (PostgreSQL): see ../0002_incarnations.sql.
ALTER TABLE instances ADD COLUMN lock_name TEXT;
ALTER TABLE instances ADD COLUMN ended_at BIGINT;
ALTER TABLE instances ADD COLUMN ended_how TEXT;

ALTER TABLE sessions ADD COLUMN instance BIGINT REFERENCES instances(id);

CREATE TABLE approvals (
    id           TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL,
    instance     BIGINT NOT NULL REFERENCES instances(id),
    run_id       TEXT NOT NULL,
    action       TEXT NOT NULL,
    origin       TEXT NOT NULL,
    tier         TEXT NOT NULL,
    requested_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    outcome      TEXT,
    decided_at   BIGINT
);

CREATE INDEX approvals_pending_by_instance ON approvals(instance) WHERE outcome IS NULL;
CREATE INDEX approvals_by_session ON approvals(session_id, requested_at);
