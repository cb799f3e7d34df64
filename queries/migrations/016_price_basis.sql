-- Prices: what each published price is (rent: on-demand, reserved, spot,
-- serverless, endpoint, marketplace, reported; buy: list, quote, street,
-- estimate, aggregator), so a median is taken over like prices.
ALTER TABLE prices ADD COLUMN basis VARCHAR;
