-- Every published price of an accelerator (data/seed/prices.csv), oldest first within an accelerator and kind.
SELECT * FROM prices ORDER BY gpu, kind, as_of, provider
