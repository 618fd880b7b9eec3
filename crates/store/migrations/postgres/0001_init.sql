-- 0001_init (PostgreSQL): the schema of ../0001_init.sql in PostgreSQL's dialect. Landed
-- migrations are never edited; add a new file (in both directories) instead. Integers are
-- BIGINT (SQLite's are 64-bit), booleans 0/1 integers as there, AUTOINCREMENT keys BIGSERIAL.

-- SQLite's json_valid, answering 0/1 as SQLite's does, for CHECKs and for the store's own
-- question before it appends.
CREATE FUNCTION json_valid(t TEXT) RETURNS INTEGER LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM t::json;
    RETURN 1;
EXCEPTION WHEN others THEN
    RETURN 0;
END
$$;

CREATE TABLE instances (
    id         BIGSERIAL PRIMARY KEY,
    started_at BIGINT NOT NULL
);

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    tools_active BIGINT NOT NULL DEFAULT 0 CHECK (tools_active IN (0, 1)),
    state        TEXT NOT NULL DEFAULT 'active',
    last_turn_id TEXT
);

CREATE TABLE resources (
    id             TEXT PRIMARY KEY,
    session_id     TEXT REFERENCES sessions(id),
    kind           TEXT NOT NULL,
    cdp_target_id  TEXT,
    instance       BIGINT REFERENCES instances(id),
    handle_lost    BIGINT NOT NULL DEFAULT 0 CHECK (handle_lost IN (0, 1)),
    ownership      TEXT NOT NULL,
    created_by_run TEXT,
    claimed_at     BIGINT,
    released_at    BIGINT,
    mark           TEXT NOT NULL DEFAULT 'none',
    mark_turn_id   TEXT,
    state          TEXT NOT NULL,
    url            TEXT,
    title          TEXT,
    location_at    BIGINT,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    version        BIGINT NOT NULL DEFAULT 1,
    CHECK ((cdp_target_id IS NULL) = (instance IS NULL))
);

CREATE INDEX resources_by_session ON resources(session_id);
CREATE UNIQUE INDEX resources_by_live_handle ON resources(cdp_target_id)
    WHERE cdp_target_id IS NOT NULL;

CREATE TABLE recovery_records (
    id              BIGSERIAL PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id),
    resource_id     TEXT REFERENCES resources(id),
    kind            TEXT NOT NULL,
    detail          TEXT NOT NULL,
    attempts        BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    last_attempt_at BIGINT NOT NULL,
    resolved_at     BIGINT
);

CREATE INDEX recovery_pending_by_session ON recovery_records(session_id, id)
    WHERE resolved_at IS NULL;

CREATE TABLE audit (
    seq         BIGSERIAL PRIMARY KEY,
    at          BIGINT NOT NULL,
    session_id  TEXT NOT NULL,
    run_id      TEXT,
    resource_id TEXT,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL CHECK (json_valid(payload) = 1)
);

CREATE INDEX audit_by_session ON audit(session_id, seq);

CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit is append-only';
END
$$;

CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
    FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
