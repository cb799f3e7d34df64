-- Every published serving power figure (data/seed/serving_power.csv), in the seed's order of ids.
SELECT * FROM serving_power ORDER BY id
