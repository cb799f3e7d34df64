-- Evidence: the tokens already in the KV cache before a measurement's own, where
-- the file states them (llama-bench `n_depth`): a prompt prefilled over them, or
-- generation at that depth (core.evidence.compare).
ALTER TABLE measurements ADD COLUMN depth BIGINT;
