-- One open operation per new server id across replicas. `adds` is the server id an install
-- or an add operation adds (NULL for every other kind), so a replica admitting such an
-- operation finds one still open for the same id on any replica, in the transaction that
-- inserts the new one (under an advisory lock on the id: see
-- crates/switchboard/src/manager/postgres/admission.rs).
ALTER TABLE manager_operations ADD COLUMN adds TEXT;
-- Only open operations count, so only theirs are filled in: `server` when the request names
-- one, else the id derived from the registry name as `manager::server_id_for` derives it
-- (the last `/`-separated part, each character outside A-Z a-z 0-9 _ - made a `-`,
-- lower-cased, `-` trimmed; `server` when nothing is left). NUL escapes as in migration 8.
UPDATE manager_operations SET adds = CASE work ->> 'op'
        WHEN 'add' THEN work ->> 'server'
        WHEN 'install' THEN coalesce(work ->> 'server', coalesce(nullif(btrim(lower(
            regexp_replace(regexp_replace(work ->> 'name', '^.*/', ''), '[^A-Za-z0-9_-]', '-', 'g')
        ), '-'), ''), 'server'))
    END
FROM (
    SELECT id AS work_id, replace(body, E'\\u0000', E'\\ufffd')::json -> 'request' -> 'work' AS work
    FROM manager_operations WHERE state IN ('queued', 'in_progress')
) AS open
WHERE id = open.work_id;
CREATE INDEX manager_operations_open_adds ON manager_operations (adds)
    WHERE state IN ('queued', 'in_progress');
