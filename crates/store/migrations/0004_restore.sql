-- 0004_restore: what a restart needs to bring retained tabs back (`004_…` 浏览器重启恢复) and
-- what a person sees of them: whether a person closed the page (it stays closed, listed as
-- closed), the preview preferences, the branch it belongs to, and how its last restore went.

ALTER TABLE resources ADD COLUMN closed_by_person INTEGER NOT NULL DEFAULT 0 CHECK (closed_by_person IN (0, 1));
ALTER TABLE resources ADD COLUMN closed_at INTEGER;
-- JSON chosen by the host or console (pinned, hidden, …); never read by a lifecycle decision.
ALTER TABLE resources ADD COLUMN preview TEXT CHECK (preview IS NULL OR json_valid(preview));
ALTER TABLE resources ADD COLUMN branch TEXT;
-- The last restore: when it succeeded, or why it failed (the row stays in its group as
-- "restore failed" and is not recreated).
ALTER TABLE resources ADD COLUMN restored_at INTEGER;
ALTER TABLE resources ADD COLUMN restore_error TEXT;

CREATE INDEX resources_restorable ON resources(created_at) WHERE handle_lost = 1 AND closed_by_person = 0;
