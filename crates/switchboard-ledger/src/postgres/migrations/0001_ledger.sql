-- The audit ledger: one hash chain per deployment, shared by every replica.
-- Appenders lock the chain's head row (SELECT ... FOR UPDATE), hash their batch onto it,
-- insert the rows and move the head, in one transaction.
CREATE TABLE ledger_head (
    chain TEXT PRIMARY KEY,
    seq BIGINT NOT NULL CHECK (seq >= 0),
    row_hash TEXT NOT NULL
);
INSERT INTO ledger_head (chain, seq, row_hash)
VALUES ('main', 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE TABLE mcp_tool_invocations (
    id BIGINT PRIMARY KEY CHECK (id > 0),
    call_id TEXT NOT NULL UNIQUE,
    started_ms BIGINT NOT NULL,
    agent TEXT, session TEXT, tier TEXT,
    exposed TEXT NOT NULL, server TEXT, tool TEXT,
    args_digest TEXT, args_redacted TEXT,
    outcome TEXT NOT NULL, error TEXT,
    duration_us BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL,
    approval TEXT, result_bytes BIGINT, cached BOOLEAN NOT NULL,
    entry TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    row_hash TEXT NOT NULL,
    -- Which gateway appended the row (host:pid), for operators; not hashed.
    replica TEXT NOT NULL,
    appended_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- The fork guard: a row has at most one successor, so two writers that both read the
    -- same head can never both extend it.
    CONSTRAINT ledger_one_successor UNIQUE (prev_hash),
    CONSTRAINT ledger_row_hash_unique UNIQUE (row_hash)
);
CREATE INDEX invocations_started ON mcp_tool_invocations (started_ms);
CREATE INDEX invocations_agent ON mcp_tool_invocations (agent, started_ms);

-- Append-only: rows are never changed or removed, by Switchboard or anyone else.
CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit ledger is append-only: % on % is refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON mcp_tool_invocations
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON mcp_tool_invocations
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
