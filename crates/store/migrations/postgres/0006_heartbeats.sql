-- 0006_heartbeats (PostgreSQL): see ../0006_heartbeats.sql.
ALTER TABLE instances ADD COLUMN heartbeat_at BIGINT;
