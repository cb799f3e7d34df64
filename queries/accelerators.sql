-- Every accelerator: the reviewed reference rows and the user's custom ones.
SELECT *, false AS custom FROM accelerators
UNION ALL BY NAME
SELECT * EXCLUDE (created_at), true AS custom FROM custom_accelerators
ORDER BY vendor, year DESC NULLS LAST, name
