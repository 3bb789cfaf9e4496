import { accountsProjection } from './accounts.ts';
import { apiKeysProjection } from './api-keys.ts';
import { billingProjection } from './billing.ts';
import { correctionUsageProjection } from './correction-usage.ts';
import { correctionsProjection } from './corrections.ts';
import { idempotencyKeysProjection } from './idempotency-keys.ts';
import { jobStatusProjection } from './job-status.ts';
import { modelsProjection } from './models.ts';
import type { Projection } from './projection.ts';
import { searchProjection } from './search.ts';
import { usersProjection } from './users.ts';

/** Every inline projection, in the order they apply each event. */
export const PROJECTIONS: readonly Projection[] = [
  jobStatusProjection,
  billingProjection,
  accountsProjection,
  apiKeysProjection,
  idempotencyKeysProjection,
  correctionUsageProjection,
  usersProjection,
  modelsProjection,
  correctionsProjection,
  searchProjection,
];

export type { Projection };
