-- The hash of the seed the reference tables were last built from.
SELECT sha256, loaded_at FROM seed_state
