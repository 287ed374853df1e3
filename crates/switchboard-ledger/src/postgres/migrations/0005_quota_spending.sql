-- Agents' cost quotas shared by every replica when `[storage] url` is set. Each replica adds
-- what its agents spent to its own rows, one per (agent, replica, time bucket), in batches
-- every 500 ms, and in the same statement reads the other replicas' rows still in their
-- window. Times are the database's clock in milliseconds since the epoch: a bucket starts at
-- `start_ms` and its spending counts until `expires_ms` (the bucket's end plus the agent's
-- quota window), so replicas never compare their own clocks. Rows past their expiry are
-- deleted by the replicas now and then; nothing else changes them.
CREATE TABLE quota_spending (
    agent TEXT NOT NULL,
    replica TEXT NOT NULL,
    start_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL,
    cost DOUBLE PRECISION NOT NULL CHECK (cost >= 0),
    PRIMARY KEY (agent, replica, start_ms)
);
CREATE INDEX quota_spending_expires ON quota_spending (expires_ms);
