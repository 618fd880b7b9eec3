-- 0005_markers: where an action's input went (`004_…` 动作标记), for a person's view: the
-- marker the runtime built from the input it dispatched (points, a field's box, key chords as
-- text; never typed text), as JSON. Drawn only over a frame of the same viewport and scroll.

ALTER TABLE operations ADD COLUMN marker TEXT CHECK (marker IS NULL OR json_valid(marker));
