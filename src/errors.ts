// Every boundary's error catalog in one list, under the heading docs/contract.md ("Error codes")
// gives it: each code with its HTTP status (null: none of its own) and whether a retry may
// succeed. The shape and its base class are domain/errors.ts; each catalog lives with its errors.
import type { ErrorCatalog } from '../domain/errors.ts';
import { REJECTION_ERRORS } from '../domain/rejections.ts';
import { WEBHOOK_URL_ERRORS } from './callbacks/webhook-url.ts';
import { EXPORT_ERRORS } from './export/errors.ts';
import { HTTP_PROBLEMS } from './http/problem.ts';
import { PORTAL_ERRORS } from './portal/errors.ts';
import { ACCOUNT_ERRORS, CORRECTION_ERRORS, MODEL_ERRORS, SUBMISSION_ERRORS } from './use-cases/errors.ts';
import { GROUND_TRUTH_ERRORS } from './intake/ground-truth-error.ts';
import { INTAKE_ERRORS } from './intake/intake-error.ts';
import { PIPELINE_ERRORS } from './recognition/page/errors.ts';
import { LAYOUT_ERRORS } from './recognition/layout/uploaded-layout.ts';

export const ERROR_CATALOGS: Readonly<Record<string, ErrorCatalog>> = {
  'Rejection codes': REJECTION_ERRORS,
  'HTTP answers': HTTP_PROBLEMS,
  Submissions: SUBMISSION_ERRORS,
  'Accounts and users': ACCOUNT_ERRORS,
  Portal: PORTAL_ERRORS,
  Uploads: INTAKE_ERRORS,
  Models: MODEL_ERRORS,
  Corrections: CORRECTION_ERRORS,
  'Ground truth': GROUND_TRUTH_ERRORS,
  'Webhook addresses': WEBHOOK_URL_ERRORS,
  'Uploaded layouts': LAYOUT_ERRORS,
  'Page pipeline': PIPELINE_ERRORS,
  Export: EXPORT_ERRORS,
};
