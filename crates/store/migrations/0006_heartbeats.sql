-- 0006_heartbeats: when each instance last said it lives. Instances that share one database
-- from several hosts cannot see each other's lock files; an instance whose heartbeat is older
-- than the takeover time is dead, and one other instance takes its records over (ending it as
-- 'abandoned' in the same transaction that checked the heartbeat).
ALTER TABLE instances ADD COLUMN heartbeat_at INTEGER;
