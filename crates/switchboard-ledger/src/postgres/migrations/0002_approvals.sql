-- The operator queue shared by every replica: a call waiting for an operator is a row,
-- decided once by a compare-and-set (UPDATE ... WHERE state = 'pending' RETURNING ...);
-- NOTIFY switchboard_approvals wakes the replicas, which also poll.
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    agent TEXT,
    tool TEXT NOT NULL,
    server TEXT NOT NULL,
    -- The call's arguments as JSON text, secrets redacted.
    arguments TEXT NOT NULL,
    -- The rule that asked for the approval.
    reason TEXT NOT NULL,
    tier TEXT,
    -- The replica whose call waits (host:pid), for operators.
    replica TEXT NOT NULL,
    requested_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'approved', 'denied', 'expired', 'withdrawn')),
    decided_by TEXT,
    decided_at TIMESTAMPTZ,
    decision_reason TEXT,
    -- Set when the approval also granted the agent's calls of the tool for these minutes.
    grant_minutes BIGINT
);
CREATE INDEX approvals_pending ON approvals (requested_at) WHERE state = 'pending';

-- Time-boxed grants: an operator's standing approval of one agent's calls of one tool.
-- A call without an agent is keyed by the empty string.
CREATE TABLE approval_grants (
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    granted_by TEXT NOT NULL,
    minutes BIGINT NOT NULL CHECK (minutes > 0),
    until TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (agent, tool)
);
