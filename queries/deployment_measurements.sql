-- Every published deployment measurement (data/seed/deployments.csv), in the seed's order of ids.
SELECT * FROM deployment_measurements ORDER BY id
