// The accounts read model on its own: given account events, these rows.
import { describe, test } from 'node:test';
import { accountsProjection } from '../../projections/accounts.ts';
import { projectionSpec } from '../support/projection-spec.ts';

const spec = await projectionSpec(accountsProjection);
const A = 'a0000000-0000-4000-8000-000000000001';
const B = 'b0000000-0000-4000-8000-000000000002';
const M = 'c0000000-0000-4000-8000-000000000003';

describe('accounts projection', () => {
  test('an account per AccountCreated; a rotation and a default model chosen change only their own account; replay from zero gives the same rows', async () => {
    await spec.given([
      {
        streamId: `account-${A}`,
        type: 'AccountCreated',
        data: { accountId: A, name: 'archive', createdAt: '2026-11-01T09:00:00.000Z', webhookSecretSha256: 'x' },
      },
      {
        streamId: `account-${B}`,
        type: 'AccountCreated',
        data: { accountId: B, name: 'library', createdAt: '2026-11-01T09:30:00.000Z', webhookSecretSha256: 'y' },
      },
      { streamId: `account-${A}`, type: 'WebhookSecretRotated', data: { webhookSecretSha256: 'z', rotatedAt: '2026-11-02T08:00:00.000Z' } },
      { streamId: `account-${B}`, type: 'AccountDefaultModelChosen', data: { model: M, chosenAt: '2026-11-03T08:00:00.000Z' } },
    ]);
    await spec.thenRows('accounts', 'name', [
      {
        account_id: A,
        name: 'archive',
        created_at: '2026-11-01T09:00:00.000Z',
        secret_rotated_at: '2026-11-02T08:00:00.000Z',
        default_model: 'default',
        default_model_chosen_at: null,
      },
      {
        account_id: B,
        name: 'library',
        created_at: '2026-11-01T09:30:00.000Z',
        secret_rotated_at: null,
        default_model: M,
        default_model_chosen_at: '2026-11-03T08:00:00.000Z',
      },
    ]);
    await spec.replayFromZero();
  });
});
