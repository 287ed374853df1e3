-- The server manager's operations and installs, shared by every replica when `[storage] url`
-- is set. An operation is one row holding its JSON (the same as SQLite's operations
-- database), its state for queries, and the replica that runs it (host:pid). Every write
-- takes a new `seq`, so a replica follows the table by asking for the rows past the last
-- `seq` it saw; NOTIFY switchboard_operations wakes the replicas, which also poll.
CREATE SEQUENCE manager_operations_seq;
CREATE TABLE manager_operations (
    id TEXT PRIMARY KEY,
    created_ms BIGINT NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('queued', 'in_progress', 'completed', 'failed', 'cancelled')),
    body TEXT NOT NULL,
    -- The replica whose manager runs the operation.
    replica TEXT NOT NULL,
    seq BIGINT NOT NULL DEFAULT nextval('manager_operations_seq'),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Set when another replica marked the operation failed because its own replica stopped
    -- answering: the owner's later writes of it are refused.
    reaped_by TEXT,
    -- Set by another replica asked to cancel the operation (the reason): the replica that
    -- runs it cancels it when it reads this.
    cancel_requested TEXT
);
ALTER SEQUENCE manager_operations_seq OWNED BY manager_operations.seq;
CREATE INDEX manager_operations_seq_idx ON manager_operations (seq);
-- A sequence value is taken before its transaction commits, so followers also read again
-- the rows changed in the last seconds.
CREATE INDEX manager_operations_updated ON manager_operations (updated_at);
CREATE INDEX manager_operations_open ON manager_operations (replica)
    WHERE state IN ('queued', 'in_progress');

-- Each replica with a manager says it is alive here every second. An open operation whose
-- replica has no row, or one older than the lease, is marked failed by whoever notices.
CREATE TABLE manager_replicas (
    replica TEXT PRIMARY KEY,
    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The servers the manager installed, one row per server id: the record names the replica
-- whose disk holds the install (`replica`), so another replica can say what it lacks.
CREATE TABLE manager_installs (
    server TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    replica TEXT NOT NULL,
    installed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
