// Where a job's files live in the blob store: one module, so that intake, workers, expiry and
// the orphan sweep agree (docs/result-archive.md describes the archive itself).
//
//   jobs/<job_id>/upload.zip                 the ZIP as uploaded
//   jobs/<job_id>/pages/<0001>.<ext>         each page image, in page order
//   jobs/<job_id>/pages/<0001>.layout.xml    a page's uploaded layout, when the ZIP had one
//   jobs/<job_id>/results/<0001>.json        each page's result (PageResult)
//   jobs/<job_id>/result.zip                 the result archive
export const JOBS_ROOT = 'jobs';

/** Everything of one job: deleting this prefix deletes the job's files. */
export const jobPrefix = (jobId: string): string => `${JOBS_ROOT}/${jobId}`;
export const uploadKey = (jobId: string): string => `${jobPrefix(jobId)}/upload.zip`;
export const pagesPrefix = (jobId: string): string => `${jobPrefix(jobId)}/pages`;
export const pageResultKey = (jobId: string, page: number): string => `${jobPrefix(jobId)}/results/${String(page).padStart(4, '0')}.json`;
export const archiveKey = (jobId: string): string => `${jobPrefix(jobId)}/result.zip`;
