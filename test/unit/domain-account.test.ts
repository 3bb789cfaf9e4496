import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decideAccount, evolveAccount, initialAccountState, MAX_ACTIVE_API_KEYS, type AccountCommand } from '../../domain/account.ts';
import type { AccountEvent } from '../../domain/events.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const account = deciderSpec({ decide: decideAccount, evolve: evolveAccount, initialState: initialAccountState });
const now = new Date('2026-11-01T00:00:00Z');
const at = now.toISOString();
const create: AccountCommand = { type: 'CreateAccount', accountId: 'a1', name: 'archive', webhookSecretSha256: 'f1', now };
const createKey: AccountCommand = { type: 'CreateApiKey', keyId: 'k1', label: 'prod', prefix: 'hwr_abcdefgh', keyHash: 'h1', now };
const revoke = (keyId: string): AccountCommand => ({ type: 'RevokeApiKey', keyId, now });
const created: AccountEvent = {
  type: 'AccountCreated',
  data: { accountId: 'a1', name: 'archive', createdAt: at, webhookSecretSha256: 'f1' },
};
const keyCreated: AccountEvent = {
  type: 'ApiKeyCreated',
  data: { keyId: 'k1', label: 'prod', prefix: 'hwr_abcdefgh', keyHash: 'h1', createdAt: at },
};
const keyRevoked: AccountEvent = { type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: at } };

describe('decideAccount', () => {
  test('creates an account once', () => {
    account.given().when(create).then([created]);
    account.given([created]).when(create).thenRejects('account_already_exists');
  });

  test('every other command needs the account', () => {
    for (const command of [createKey, revoke('k1'), { type: 'RotateWebhookSecret', webhookSecretSha256: 'f2', now } as AccountCommand]) {
      account.given().when(command).thenRejects('account_not_found');
    }
  });

  test('a key is recorded with its hash only, once per id', () => {
    const state = account.given([created]).when(createKey).then([keyCreated]);
    assert.equal(state.keys.k1.revokedAt, null);
    account.given([created, keyCreated]).when(createKey).thenRejects('key_already_exists');
  });

  test('an account holds at most MAX_ACTIVE_API_KEYS active keys; a revoked one makes room', () => {
    const keys = Array.from(
      { length: MAX_ACTIVE_API_KEYS },
      (_, i): AccountEvent => ({
        type: 'ApiKeyCreated',
        data: { keyId: `k${i}`, label: 'scanner', prefix: 'hwr_abcdefgh', keyHash: `h${i}`, createdAt: at },
      }),
    );
    const another: AccountCommand = { ...createKey, keyId: 'one-more' };
    account
      .given([created, ...keys])
      .when(another)
      .thenRejects('too_many_api_keys');
    const revoked: AccountEvent = { type: 'ApiKeyRevoked', data: { keyId: 'k7', revokedAt: at } };
    account
      .given([created, ...keys, revoked])
      .when(another)
      .then([{ ...keyCreated, data: { ...keyCreated.data, keyId: 'one-more' } }]);
  });

  test('revoking: once; an unknown key is refused', () => {
    const state = account.given([created, keyCreated]).when(revoke('k1')).then([keyRevoked]);
    assert.equal(state.keys.k1.revokedAt, at);
    account.given([created, keyCreated, keyRevoked]).when(revoke('k1')).thenNothing();
    account.given([created, keyCreated]).when(revoke('nope')).thenRejects('key_not_found');
  });

  test('rotating the webhook secret records its new fingerprint', () => {
    const state = account
      .given([created])
      .when({ type: 'RotateWebhookSecret', webhookSecretSha256: 'f2', now })
      .then([{ type: 'WebhookSecretRotated', data: { webhookSecretSha256: 'f2', rotatedAt: at } }]);
    assert.equal(state.webhookSecretSha256, 'f2');
  });

  test('the default model: default at first; a choice is recorded, the same choice again decides nothing', () => {
    assert.equal(account.given([created]).state.defaultModel, 'default');
    account.given([created]).when({ type: 'ChooseDefaultModel', model: 'default', now }).thenNothing();
    const chosen: AccountEvent = { type: 'AccountDefaultModelChosen', data: { model: 'm1', chosenAt: at } };
    const state = account.given([created]).when({ type: 'ChooseDefaultModel', model: 'm1', now }).then([chosen]);
    assert.equal(state.defaultModel, 'm1');
    account.given([created, chosen]).when({ type: 'ChooseDefaultModel', model: 'm1', now }).thenNothing();
    account
      .given([created, chosen])
      .when({ type: 'ChooseDefaultModel', model: 'default', now })
      .then([{ type: 'AccountDefaultModelChosen', data: { model: 'default', chosenAt: at } }]);
    account.given().when({ type: 'ChooseDefaultModel', model: 'm1', now }).thenRejects('account_not_found');
  });
});
