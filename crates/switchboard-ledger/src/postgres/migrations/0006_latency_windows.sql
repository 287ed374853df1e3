-- Latency statistics of every replica when `[storage] url` is set: one row per (environment,
-- tool, replica) holding the window of calls *that replica* measured (its last N latencies in
-- microseconds and their outcomes, oldest first), replaced whenever it saves. A replica's
-- picture of a tool is the union of every replica's samples (merged as samples, never by
-- averaging percentiles), so tiers, `tools --stats` and the console show the fleet's figures
-- and a fresh replica starts with them. Rows not saved for a day are deleted by the replicas.
CREATE TABLE latency_windows (
    environment TEXT NOT NULL,
    tool TEXT NOT NULL,
    replica TEXT NOT NULL,
    latencies_us BIGINT[] NOT NULL,
    outcomes SMALLINT[] NOT NULL,
    saved_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (environment, tool, replica),
    CHECK (cardinality(latencies_us) = cardinality(outcomes))
);
CREATE INDEX latency_windows_saved ON latency_windows (saved_at);
