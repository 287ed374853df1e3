-- Managed configuration: the servers changed through the live operation (`servers add`,
-- `remove`, `enable`, `disable`, the admin endpoint, the console), shared by every replica.
-- Each change is a new row holding the whole document; the head is the highest revision.
-- A replica writes revision = the head it based its change on + 1, so two replicas changing
-- at once cannot both win: the primary key refuses the later one (a conflict, retried).
CREATE TABLE managed_config (
    revision BIGINT PRIMARY KEY CHECK (revision > 0),
    document TEXT NOT NULL,
    change TEXT NOT NULL,
    surface TEXT NOT NULL,
    actor TEXT,
    replica TEXT NOT NULL,
    changed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
