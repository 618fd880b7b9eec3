-- 0004_restore (PostgreSQL): see ../0004_restore.sql.
ALTER TABLE resources ADD COLUMN closed_by_person BIGINT NOT NULL DEFAULT 0 CHECK (closed_by_person IN (0, 1));
ALTER TABLE resources ADD COLUMN closed_at BIGINT;
ALTER TABLE resources ADD COLUMN preview TEXT CHECK (preview IS NULL OR json_valid(preview) = 1);
ALTER TABLE resources ADD COLUMN branch TEXT;
ALTER TABLE resources ADD COLUMN restored_at BIGINT;
ALTER TABLE resources ADD COLUMN restore_error TEXT;

CREATE INDEX resources_restorable ON resources(created_at) WHERE handle_lost = 1 AND closed_by_person = 0;
