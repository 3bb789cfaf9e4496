// Where a job's files live in the blob store: one module, so that intake, workers, expiry and
// the orphan sweep agree (docs/result-archive.md describes the archive itself).
//
//   jobs/<job_id>/upload.zip                 the ZIP as uploaded
//   jobs/<job_id>/pages/<0001>.<ext>         each page image, in page order
//   jobs/<job_id>/pages/<0001>.layout.xml    a page's uploaded layout, when the ZIP had one
//   jobs/<job_id>/results/<0001>.<claim>.json   each page's result (PageResult)
//   jobs/<job_id>/result.<claim>.zip            the result archive
//
// Results and archives are named by the claim of the task that wrote them: a retry of a task whose
// heartbeat lapsed can run beside its first attempt, and with one name per page (or job) the
// losing attempt wrote over, or deleted, what the winning one had recorded (found 2026-11-27). The
// events name the key that won (PageCompleted.resultKey, JobSucceeded.archiveKey), and a claim
// that finds another's key recorded deletes its own file; files written before that are
// `results/<0001>.json` and `result.zip`, and still read through their events.
//
// A model's files (docs/models.md), under one prefix too:
//
//   models/<model_id>/ground-truth/pages/<0001>.<ext>         each page image of the ground truth
//   models/<model_id>/ground-truth/pages/<0001>.layout.xml    its PageXML or ALTO file, as uploaded
//   models/<model_id>/ground-truth/ground-truth.json          the lines to train on (src/intake/ground-truth.ts)
//   models/<model_id>/run/…                                   the trainer's checkpoints (resume after a crash)
//   models/<model_id>/model/…                                 the trained model directory (rec.onnx, charset.txt, manifest.json)
import { randomBytes } from 'node:crypto';

export const JOBS_ROOT = 'jobs';

/** Everything of one job: deleting this prefix deletes the job's files. */
export const jobPrefix = (jobId: string): string => `${JOBS_ROOT}/${jobId}`;
export const uploadKey = (jobId: string): string => `${jobPrefix(jobId)}/upload.zip`;
export const pagesPrefix = (jobId: string): string => `${jobPrefix(jobId)}/pages`;
export const pageResultKey = (jobId: string, page: number, claim: string): string =>
  `${jobPrefix(jobId)}/results/${String(page).padStart(4, '0')}.${claim}.json`;
export const archiveKey = (jobId: string, claim: string): string => `${jobPrefix(jobId)}/result.${claim}.zip`;

export const MODELS_ROOT = 'models';

/** Everything of one model: deleting this prefix deletes its ground truth, its checkpoints and the model. */
export const modelPrefix = (modelId: string): string => `${MODELS_ROOT}/${modelId}`;
export const groundTruthPrefix = (modelId: string): string => `${modelPrefix(modelId)}/ground-truth`;
/** Where the trained model directory goes (ModelTrained.modelKey). */
export const trainedModelPrefix = (modelId: string): string => `${modelPrefix(modelId)}/model`;

/**
 * One claim of a pg-boss task, named when its handler takes it: the task id, its retry count, and
 * a nonce, since a task handed back at shutdown is claimed again with the same retry count. The
 * reruns of one claim after an outage keep the name (their writes replace its own file).
 */
export const claimName = (task: { id: string; retryCount: number }): string =>
  `${task.id}-${task.retryCount}-${randomBytes(4).toString('hex')}`;
