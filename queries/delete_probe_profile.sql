-- Delete one measured profile.
DELETE FROM probe_profiles WHERE id = $id
