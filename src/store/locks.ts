// Advisory lock ids (one place, so no two uses collide).
export const MIGRATION_LOCK = 7285000;
/** Taken shared by every append (hwr_append_to_stream), exclusively by rebuild/verify's catch-up. */
export const APPEND_LOCK = 7285001;
export const IDEMPOTENCY_LOCK_NAMESPACE = 7285002;
// 7285003, with hashtext(stream_id): taken by every append until commit, so one stream's appends
// queue (in SQL only: hwr_append_to_stream, migrations/0006_page_scoped_appends.sql).
/** With hashtext(account_id): one account's submissions one at a time (limits: src/use-cases/submit-job.ts; fair share: src/queue/fair-share.ts). */
export const ACCOUNT_SUBMISSION_LOCK_NAMESPACE = 7285004;
