-- Agents' bearer tokens, shared by every replica when `[storage] url` is set: one row per
-- token, holding only its salted hash (`sha256$<salt>$<hash>`), never the token. A revoked
-- token keeps its row (revoked_at, revoked_by) so operators can see what was revoked and
-- when; replicas accept only the rows with revoked_at IS NULL. Every change is announced
-- with NOTIFY switchboard_tokens in its transaction; replicas also poll in case one is lost.
CREATE TABLE agent_tokens (
    hash TEXT PRIMARY KEY CHECK (hash LIKE 'sha256$%$%'),
    id TEXT NOT NULL,
    agent TEXT NOT NULL,
    created TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at TIMESTAMPTZ,
    revoked_by TEXT
);
CREATE INDEX agent_tokens_live ON agent_tokens (id) WHERE revoked_at IS NULL;
