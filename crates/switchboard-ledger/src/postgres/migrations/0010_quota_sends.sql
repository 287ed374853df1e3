-- Makes sending a replica's quota spending idempotent. An exchange that timed out, or lost its
-- connection, may still have been applied; sent again, its spending would count twice. Each
-- replica process (a random `incarnation`, so a restarted process with the same replica name
-- starts afresh) numbers its sends in order, and an exchange adds its spending only when its
-- number is above the highest one recorded here, which it raises in the same statement.
-- `at_ms` is the database's clock at the last send that added spending; rows idle for 30 days
-- are deleted.
CREATE TABLE quota_sends (
    replica TEXT NOT NULL,
    incarnation TEXT NOT NULL,
    sent BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (replica, incarnation)
);
