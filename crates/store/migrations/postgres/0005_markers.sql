-- 0005_markers (PostgreSQL): see ../0005_markers.sql.
ALTER TABLE operations ADD COLUMN marker TEXT CHECK (marker IS NULL OR json_valid(marker) = 1);
