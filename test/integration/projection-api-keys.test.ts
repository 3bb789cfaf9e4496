// The api_keys read model on its own: keys belong to their account's stream; a revocation
// stamps only the key it names.
import { describe, test } from 'node:test';
import { apiKeysProjection } from '../../projections/api-keys.ts';
import { projectionSpec } from '../support/projection-spec.ts';

const spec = await projectionSpec(apiKeysProjection);
const A = 'a0000000-0000-4000-8000-000000000001';
const K1 = 'c0000000-0000-4000-8000-000000000001';
const K2 = 'c0000000-0000-4000-8000-000000000002';
const created = (keyId: string, label: string, at: string) => ({
  streamId: `account-${A}`,
  type: 'ApiKeyCreated' as const,
  data: { keyId, label, prefix: `hwr_${label}`, keyHash: `hash-${label}`, createdAt: at },
});

describe('api_keys projection', () => {
  test('keys of an account with label, prefix and hash; a revoked key keeps its row with revoked_at; replay from zero gives the same rows', async () => {
    await spec.given([
      created(K1, 'scanner', '2026-11-01T09:00:00.000Z'),
      created(K2, 'portal', '2026-11-01T09:05:00.000Z'),
      { streamId: `account-${A}`, type: 'ApiKeyRevoked', data: { keyId: K1, revokedAt: '2026-11-03T12:00:00.000Z' } },
    ]);
    await spec.thenRows('api_keys', 'created_at', [
      {
        key_id: K1,
        account_id: A,
        label: 'scanner',
        prefix: 'hwr_scanner',
        key_hash: 'hash-scanner',
        revoked_at: '2026-11-03T12:00:00.000Z',
      },
      { key_id: K2, account_id: A, label: 'portal', prefix: 'hwr_portal', key_hash: 'hash-portal', revoked_at: null },
    ]);
    await spec.replayFromZero();
  });
});
