// Accounts and their API keys: state, evolve and decide. Pure.
import type { AccountEvent } from './events.ts';
import { reject } from './rejections.ts';

export interface ApiKeyState {
  keyId: string;
  label: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface AccountState {
  version: number;
  exists: boolean;
  accountId: string;
  name: string;
  webhookSecretSha256: string | null;
  keys: Record<string, ApiKeyState>;
}

export function initialAccountState(): AccountState {
  return { version: 0, exists: false, accountId: '', name: '', webhookSecretSha256: null, keys: {} };
}

export function evolveAccount(state: AccountState, event: AccountEvent): AccountState {
  const next = { ...state, version: state.version + 1 };
  switch (event.type) {
    case 'AccountCreated':
      return { ...next, exists: true, accountId: event.data.accountId, name: event.data.name, webhookSecretSha256: event.data.webhookSecretSha256 };
    case 'ApiKeyCreated': {
      const { keyId, label, prefix, createdAt } = event.data;
      return { ...next, keys: { ...state.keys, [keyId]: { keyId, label, prefix, createdAt, revokedAt: null } } };
    }
    case 'ApiKeyRevoked': {
      const key = state.keys[event.data.keyId];
      if (!key) return next;
      return { ...next, keys: { ...state.keys, [key.keyId]: { ...key, revokedAt: event.data.revokedAt } } };
    }
    case 'WebhookSecretRotated':
      return { ...next, webhookSecretSha256: event.data.webhookSecretSha256 };
  }
}

export type AccountCommand =
  | { type: 'CreateAccount'; accountId: string; name: string; webhookSecretSha256: string; now: Date }
  | { type: 'CreateApiKey'; keyId: string; label: string; prefix: string; keyHash: string; now: Date }
  | { type: 'RevokeApiKey'; keyId: string; now: Date }
  | { type: 'RotateWebhookSecret'; webhookSecretSha256: string; now: Date };

export function decideAccount(state: AccountState, command: AccountCommand): AccountEvent[] {
  if (command.type === 'CreateAccount') {
    if (state.exists) reject('account_already_exists');
    return [
      {
        type: 'AccountCreated',
        data: { accountId: command.accountId, name: command.name, createdAt: command.now.toISOString(), webhookSecretSha256: command.webhookSecretSha256 },
      },
    ];
  }
  if (!state.exists) reject('account_not_found');
  switch (command.type) {
    case 'CreateApiKey':
      if (state.keys[command.keyId]) reject('key_already_exists');
      return [
        {
          type: 'ApiKeyCreated',
          data: { keyId: command.keyId, label: command.label, prefix: command.prefix, keyHash: command.keyHash, createdAt: command.now.toISOString() },
        },
      ];
    case 'RevokeApiKey': {
      const key = state.keys[command.keyId];
      if (!key) reject('key_not_found');
      if (key.revokedAt !== null) return [];
      return [{ type: 'ApiKeyRevoked', data: { keyId: command.keyId, revokedAt: command.now.toISOString() } }];
    }
    case 'RotateWebhookSecret':
      return [{ type: 'WebhookSecretRotated', data: { webhookSecretSha256: command.webhookSecretSha256, rotatedAt: command.now.toISOString() } }];
  }
}

export function foldAccount(events: readonly AccountEvent[]): AccountState {
  return events.reduce(evolveAccount, initialAccountState());
}
