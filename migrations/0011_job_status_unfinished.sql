-- An account's unfinished (queued and processing) jobs, read at every submission for the
-- per-account limits and the page tasks' fair-share priority (docs/operations.md, "Limits"),
-- without walking the account's whole history.
create index job_status_account_unfinished on job_status (account_id) where state in ('queued', 'processing');
