-- Every published reference measurement (data/seed/reference_measurements.csv), in the seed's order of ids.
SELECT * FROM reference_measurements ORDER BY id
