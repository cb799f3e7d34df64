-- Evidence (issue 13): the model file's own size where a benchmark file states
-- it (llama-bench `model_size`), in bytes; the ceiling then uses its bits per
-- weight (bytes x 8 / parameters) instead of the weight format's nominal bits.
ALTER TABLE measurements ADD COLUMN model_bytes DOUBLE;
