-- 0001_init: the first schema. Landed migrations are never edited; add a new file instead.
-- Times are milliseconds since the Unix epoch, passed in by the caller.
-- Enum-valued columns are TEXT without CHECK lists on purpose: SQLite cannot alter a CHECK,
-- so a new variant would force a table rebuild. The Rust side rejects unknown values as corrupt.

CREATE TABLE instances (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at INTEGER NOT NULL
) STRICT;

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    tools_active INTEGER NOT NULL DEFAULT 0 CHECK (tools_active IN (0, 1)),
    state        TEXT NOT NULL DEFAULT 'active',
    last_turn_id TEXT
) STRICT;

CREATE TABLE resources (
    id             TEXT PRIMARY KEY,
    session_id     TEXT REFERENCES sessions(id),
    kind           TEXT NOT NULL,
    cdp_target_id  TEXT,
    instance       INTEGER REFERENCES instances(id),
    handle_lost    INTEGER NOT NULL DEFAULT 0 CHECK (handle_lost IN (0, 1)),
    ownership      TEXT NOT NULL,
    created_by_run TEXT,
    claimed_at     INTEGER,
    released_at    INTEGER,
    mark           TEXT NOT NULL DEFAULT 'none',
    mark_turn_id   TEXT,
    state          TEXT NOT NULL,
    url            TEXT,
    title          TEXT,
    location_at    INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    version        INTEGER NOT NULL DEFAULT 1,
    -- A live handle is a target id together with the process instance that saw it.
    CHECK ((cdp_target_id IS NULL) = (instance IS NULL))
) STRICT;

CREATE INDEX resources_by_session ON resources(session_id);
CREATE UNIQUE INDEX resources_by_live_handle ON resources(cdp_target_id)
    WHERE cdp_target_id IS NOT NULL;

CREATE TABLE recovery_records (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id      TEXT NOT NULL REFERENCES sessions(id),
    resource_id     TEXT REFERENCES resources(id),
    kind            TEXT NOT NULL,
    detail          TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    last_attempt_at INTEGER NOT NULL,
    resolved_at     INTEGER
) STRICT;

CREATE INDEX recovery_pending_by_session ON recovery_records(session_id, id)
    WHERE resolved_at IS NULL;

-- Append-only: no foreign keys (the audit records what it is given, even about a session
-- this store never saw) and triggers refuse any UPDATE or DELETE.
CREATE TABLE audit (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    session_id  TEXT NOT NULL,
    run_id      TEXT,
    resource_id TEXT,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL CHECK (json_valid(payload))
) STRICT;

CREATE INDEX audit_by_session ON audit(session_id, seq);

CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN
    SELECT RAISE(ABORT, 'audit is append-only');
END;

CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN
    SELECT RAISE(ABORT, 'audit is append-only');
END;
