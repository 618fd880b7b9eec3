-- 0003_records: durable runs and the operation log (one row per action that reached the one
-- action path, for runs and direct calls alike), so a person can read afterwards what the agent
-- did and a restart knows which effects are uncertain. Typed text is only its length and
-- whether it was secret; URLs are stored as the caller redacted them.

CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    instance    INTEGER REFERENCES instances(id),
    -- The surface key the run held, and the task as the person gave it (bounded by the caller).
    surface     TEXT NOT NULL,
    task        TEXT NOT NULL,
    -- The resolved model choice ('openai_chat/gpt-…', 'sampling', 'program'), if known.
    model       TEXT,
    max_steps   INTEGER NOT NULL,
    max_seconds INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    -- NULL while running; then the RunResult's status and reason, or 'abandoned' (its server
    -- died and a restart found it).
    ended_at    INTEGER,
    status      TEXT,
    reason      TEXT,
    summary     TEXT,
    steps       INTEGER,
    -- What the model calls cost (JSON), when a model planned.
    accounting  TEXT CHECK (accounting IS NULL OR json_valid(accounting))
) STRICT;

CREATE INDEX runs_by_session ON runs(session_id, started_at);
CREATE INDEX runs_open_by_instance ON runs(instance) WHERE ended_at IS NULL;

CREATE TABLE operations (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    session_id       TEXT NOT NULL,
    -- NULL for a direct call (MCP act, the host API's act).
    run_id           TEXT,
    instance         INTEGER REFERENCES instances(id),
    -- The surface key (`s1`) acted on, and the tab record behind it.
    surface          TEXT NOT NULL,
    resource_id      TEXT,
    -- The action's kind as sent, its target as described to a person, typed text's length
    -- and sensitivity, and the page's (redacted) URL.
    action           TEXT NOT NULL,
    target           TEXT,
    text_chars       INTEGER,
    secret           INTEGER NOT NULL DEFAULT 0 CHECK (secret IN (0, 1)),
    url              TEXT,
    frame_before     TEXT NOT NULL,
    frame_after      TEXT,
    -- attempted (written before dispatch) → dispatched | confirmed | failed | unknown.
    state            TEXT NOT NULL,
    effect_uncertain INTEGER NOT NULL DEFAULT 0 CHECK (effect_uncertain IN (0, 1)),
    error            TEXT,
    detail           TEXT,
    started_at       INTEGER NOT NULL,
    ended_at         INTEGER
) STRICT;

CREATE INDEX operations_by_session ON operations(session_id, seq);
CREATE INDEX operations_by_run ON operations(run_id, seq) WHERE run_id IS NOT NULL;
CREATE INDEX operations_open_by_instance ON operations(instance) WHERE ended_at IS NULL;
CREATE INDEX operations_by_time ON operations(started_at);
