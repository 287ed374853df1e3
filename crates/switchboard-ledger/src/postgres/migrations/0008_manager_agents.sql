-- The server manager's limits across replicas. `agent` is the agent that asked for an
-- operation (NULL: an operator, or the gateway itself), so a replica admitting an agent's
-- operation counts that agent's open operations on every replica, in the transaction that
-- inserts the new one (under an advisory lock on the agent: see
-- crates/switchboard/src/manager/postgres/admission.rs).
ALTER TABLE manager_operations ADD COLUMN agent TEXT;
-- Rows written before this migration name their agent in their JSON only. PostgreSQL cannot
-- read a JSON text that escapes a NUL character (`\u0000`, which an operation's error or
-- result may hold), so each such escape is read as U+FFFD (`\ufffd`, as the ledger does):
-- the replacement begins with the same backslash, so it never changes the JSON's structure.
UPDATE manager_operations
SET agent = replace(body, E'\\u0000', E'\\ufffd')::json -> 'request' ->> 'agent';
CREATE INDEX manager_operations_open_agent ON manager_operations (agent)
    WHERE state IN ('queued', 'in_progress');
-- Finished operations are pruned, oldest first (kept 30 days, at most 2,000 per deployment).
CREATE INDEX manager_operations_finished ON manager_operations (created_ms, id)
    WHERE state IN ('completed', 'failed', 'cancelled');
