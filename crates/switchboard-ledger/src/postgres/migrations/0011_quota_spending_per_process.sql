-- A replica's quota spending is kept per process, not per replica name. Replicas are named by
-- host and process id, which repeat: a container restarted in place is PID 1 on the same host
-- name again. Keyed by name alone, the restarted process took its predecessor's rows for its
-- own, which a replica never reads back, and so forgot what had been spent in the window. Each
-- process writes under its random `incarnation` (as `quota_sends` has it) and reads every row
-- that is not its own process's; rows written before this migration have an empty one, so they
-- count as another process's.
ALTER TABLE quota_spending ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
ALTER TABLE quota_spending DROP CONSTRAINT quota_spending_pkey;
ALTER TABLE quota_spending ADD PRIMARY KEY (agent, replica, incarnation, start_ms);
