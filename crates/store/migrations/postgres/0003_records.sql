-- 0003_records (PostgreSQL): see ../0003_records.sql.
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    instance    BIGINT REFERENCES instances(id),
    surface     TEXT NOT NULL,
    task        TEXT NOT NULL,
    model       TEXT,
    max_steps   BIGINT NOT NULL,
    max_seconds BIGINT NOT NULL,
    started_at  BIGINT NOT NULL,
    ended_at    BIGINT,
    status      TEXT,
    reason      TEXT,
    summary     TEXT,
    steps       BIGINT,
    accounting  TEXT CHECK (accounting IS NULL OR json_valid(accounting) = 1)
);

CREATE INDEX runs_by_session ON runs(session_id, started_at);
CREATE INDEX runs_open_by_instance ON runs(instance) WHERE ended_at IS NULL;

CREATE TABLE operations (
    seq              BIGSERIAL PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    session_id       TEXT NOT NULL,
    run_id           TEXT,
    instance         BIGINT REFERENCES instances(id),
    surface          TEXT NOT NULL,
    resource_id      TEXT,
    action           TEXT NOT NULL,
    target           TEXT,
    text_chars       BIGINT,
    secret           BIGINT NOT NULL DEFAULT 0 CHECK (secret IN (0, 1)),
    url              TEXT,
    frame_before     TEXT NOT NULL,
    frame_after      TEXT,
    state            TEXT NOT NULL,
    effect_uncertain BIGINT NOT NULL DEFAULT 0 CHECK (effect_uncertain IN (0, 1)),
    error            TEXT,
    detail           TEXT,
    started_at       BIGINT NOT NULL,
    ended_at         BIGINT
);

CREATE INDEX operations_by_session ON operations(session_id, seq);
CREATE INDEX operations_by_run ON operations(run_id, seq) WHERE run_id IS NOT NULL;
CREATE INDEX operations_open_by_instance ON operations(instance) WHERE ended_at IS NULL;
CREATE INDEX operations_by_time ON operations(started_at);
