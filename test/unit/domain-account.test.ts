import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decideAccount, evolveAccount, initialAccountState, type AccountCommand, type AccountState } from '../../domain/account.ts';
import { Rejection } from '../../domain/rejections.ts';

const now = new Date('2026-11-01T00:00:00Z');
const create: AccountCommand = { type: 'CreateAccount', accountId: 'a1', name: 'archive', webhookSecretSha256: 'f1', now };
const key: AccountCommand = { type: 'CreateApiKey', keyId: 'k1', label: 'prod', prefix: 'hwr_abcdefgh', keyHash: 'h1', now };

function apply(state: AccountState, command: AccountCommand): AccountState {
  return decideAccount(state, command).reduce(evolveAccount, state);
}

describe('decideAccount', () => {
  test('creates an account once', () => {
    const state = apply(initialAccountState(), create);
    assert.equal(state.exists, true);
    assert.throws(() => decideAccount(state, create), (error: unknown) => error instanceof Rejection && error.code === 'account_already_exists');
  });
  test('every other command needs the account', () => {
    for (const command of [key, { type: 'RevokeApiKey', keyId: 'k1', now } as AccountCommand, { type: 'RotateWebhookSecret', webhookSecretSha256: 'f2', now } as AccountCommand]) {
      assert.throws(() => decideAccount(initialAccountState(), command), (error: unknown) => error instanceof Rejection && error.code === 'account_not_found');
    }
  });
  test('a key is recorded with its hash only, once per id', () => {
    const state = apply(apply(initialAccountState(), create), key);
    const [event] = decideAccount(apply(initialAccountState(), create), key);
    assert.deepEqual(Object.keys(event.data).sort(), ['createdAt', 'keyHash', 'keyId', 'label', 'prefix']);
    assert.equal(state.keys.k1.revokedAt, null);
    assert.throws(() => decideAccount(state, key), (error: unknown) => error instanceof Rejection && error.code === 'key_already_exists');
  });
  test('revoking: once, unknown keys refused', () => {
    const revoke: AccountCommand = { type: 'RevokeApiKey', keyId: 'k1', now };
    const state = apply(apply(apply(initialAccountState(), create), key), revoke);
    assert.equal(state.keys.k1.revokedAt, now.toISOString());
    assert.deepEqual(decideAccount(state, revoke), []);
    assert.throws(() => decideAccount(state, { type: 'RevokeApiKey', keyId: 'nope', now }), (error: unknown) => error instanceof Rejection && error.code === 'key_not_found');
  });
  test('rotating the webhook secret records its new fingerprint', () => {
    const state = apply(apply(initialAccountState(), create), { type: 'RotateWebhookSecret', webhookSecretSha256: 'f2', now });
    assert.equal(state.webhookSecretSha256, 'f2');
  });
});
