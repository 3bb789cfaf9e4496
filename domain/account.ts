// Accounts and their API keys: state, evolve and decide. Pure.
import type { AccountEvent } from './events.ts';
import { DEFAULT_MODEL } from './model.ts';
import { reject } from './rejections.ts';

export interface ApiKeyState {
  keyId: string;
  label: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

/** A portal user of the account (docs/portal.md); its password hash lives outside the log. */
export interface UserState {
  userId: string;
  email: string;
  /** Created: the user set a password through a setup link at least once. */
  created: boolean;
  invites: Record<string, { expiresAt: string; usedAt: string | null }>;
}

/**
 * Active (unrevoked) API keys an account may hold. The request rate is limited per key
 * (RATE_LIMIT_PER_SECOND), so keys without number would multiply it; 100 is more than one key per
 * scanner, script and colleague of any customer we know of.
 */
export const MAX_ACTIVE_API_KEYS = 100;

export interface AccountState {
  version: number;
  exists: boolean;
  accountId: string;
  name: string;
  webhookSecretSha256: string | null;
  keys: Record<string, ApiKeyState>;
  users: Record<string, UserState>;
  /** The model jobs that name none read with: `default` or a model id (AccountDefaultModelChosen). */
  defaultModel: string;
}

export function initialAccountState(): AccountState {
  return {
    version: 0,
    exists: false,
    accountId: '',
    name: '',
    webhookSecretSha256: null,
    keys: {},
    users: {},
    defaultModel: DEFAULT_MODEL,
  };
}

export function evolveAccount(state: AccountState, event: AccountEvent): AccountState {
  const next = { ...state, version: state.version + 1 };
  switch (event.type) {
    case 'AccountCreated':
      return {
        ...next,
        exists: true,
        accountId: event.data.accountId,
        name: event.data.name,
        webhookSecretSha256: event.data.webhookSecretSha256,
      };
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
    case 'UserInvited': {
      const { userId, email, inviteId, invitedAt, expiresAt } = event.data;
      const user = state.users[userId] ?? { userId, email, created: false, invites: {} };
      // A new setup link ends the user's older unused ones.
      const invites: UserState['invites'] = {};
      for (const [id, invite] of Object.entries(user.invites)) {
        invites[id] =
          invite.usedAt === null && Date.parse(invite.expiresAt) > Date.parse(invitedAt) ? { ...invite, expiresAt: invitedAt } : invite;
      }
      invites[inviteId] = { expiresAt, usedAt: null };
      return { ...next, users: { ...state.users, [userId]: { ...user, invites } } };
    }
    case 'UserCreated':
      return { ...next, users: useInvite(state.users, event.data.userId, event.data.inviteId, event.data.createdAt, true) };
    case 'PasswordChanged':
      return { ...next, users: useInvite(state.users, event.data.userId, event.data.inviteId, event.data.changedAt, false) };
    case 'UserSignedIn':
    case 'UserSignInFailed':
      return next;
    case 'AccountDefaultModelChosen':
      return { ...next, defaultModel: event.data.model };
  }
}

function useInvite(
  users: Record<string, UserState>,
  userId: string,
  inviteId: string | null,
  at: string,
  created: boolean,
): Record<string, UserState> {
  const user = users[userId];
  if (!user) return users;
  const invites =
    inviteId !== null && user.invites[inviteId] ? { ...user.invites, [inviteId]: { ...user.invites[inviteId], usedAt: at } } : user.invites;
  return { ...users, [userId]: { ...user, created: user.created || created, invites } };
}

export type AccountCommand =
  | { type: 'CreateAccount'; accountId: string; name: string; webhookSecretSha256: string; now: Date }
  | { type: 'CreateApiKey'; keyId: string; label: string; prefix: string; keyHash: string; now: Date }
  | { type: 'RevokeApiKey'; keyId: string; now: Date }
  | { type: 'RotateWebhookSecret'; webhookSecretSha256: string; now: Date }
  | { type: 'InviteUser'; userId: string; email: string; inviteId: string; tokenSha256: string; expiresAt: Date; now: Date }
  /** Sets the password through a setup link: single use, until the link expires. */
  | { type: 'CompleteSetup'; userId: string; inviteId: string; now: Date }
  | { type: 'ChangePassword'; userId: string; now: Date }
  | { type: 'RecordSignIn'; userId: string; address: string; sessionRef: string; now: Date }
  | { type: 'RecordSignInFailure'; userId: string; address: string; reason: 'wrong_password' | 'no_password'; now: Date }
  /**
   * `model`: `default` or the id of a model of the account that the caller found ready (a model is
   * a stream of its own: the use case checks it, use-cases/models.ts). The same choice again decides nothing.
   */
  | { type: 'ChooseDefaultModel'; model: string; now: Date };

export function decideAccount(state: AccountState, command: AccountCommand): AccountEvent[] {
  if (command.type === 'CreateAccount') {
    if (state.exists) reject('account_already_exists');
    return [
      {
        type: 'AccountCreated',
        data: {
          accountId: command.accountId,
          name: command.name,
          createdAt: command.now.toISOString(),
          webhookSecretSha256: command.webhookSecretSha256,
        },
      },
    ];
  }
  if (!state.exists) reject('account_not_found');
  switch (command.type) {
    case 'CreateApiKey':
      if (state.keys[command.keyId]) reject('key_already_exists');
      if (Object.values(state.keys).filter((key) => key.revokedAt === null).length >= MAX_ACTIVE_API_KEYS) reject('too_many_api_keys');
      return [
        {
          type: 'ApiKeyCreated',
          data: {
            keyId: command.keyId,
            label: command.label,
            prefix: command.prefix,
            keyHash: command.keyHash,
            createdAt: command.now.toISOString(),
          },
        },
      ];
    case 'RevokeApiKey': {
      const key = state.keys[command.keyId];
      if (!key) reject('key_not_found');
      if (key.revokedAt !== null) return [];
      return [{ type: 'ApiKeyRevoked', data: { keyId: command.keyId, revokedAt: command.now.toISOString() } }];
    }
    case 'RotateWebhookSecret':
      return [
        { type: 'WebhookSecretRotated', data: { webhookSecretSha256: command.webhookSecretSha256, rotatedAt: command.now.toISOString() } },
      ];
    case 'InviteUser': {
      const existing = state.users[command.userId];
      if (existing && existing.email !== command.email) reject('user_already_exists', `user ${command.userId} has another email`);
      const other = Object.values(state.users).find((user) => user.email === command.email && user.userId !== command.userId);
      if (other) reject('user_already_exists', `${command.email} is already a user of this account`);
      if (existing?.invites[command.inviteId]) reject('user_already_exists', `invite ${command.inviteId} exists`);
      const { userId, email, inviteId, tokenSha256 } = command;
      return [
        {
          type: 'UserInvited',
          data: { userId, email, inviteId, tokenSha256, invitedAt: command.now.toISOString(), expiresAt: command.expiresAt.toISOString() },
        },
      ];
    }
    case 'CompleteSetup': {
      const user = state.users[command.userId];
      const invite = user?.invites[command.inviteId];
      if (!user || !invite) reject('invite_not_found');
      if (invite.usedAt !== null) reject('invite_used');
      if (command.now.getTime() >= Date.parse(invite.expiresAt)) reject('invite_expired');
      const at = command.now.toISOString();
      if (!user.created)
        return [{ type: 'UserCreated', data: { userId: user.userId, email: user.email, inviteId: command.inviteId, createdAt: at } }];
      return [{ type: 'PasswordChanged', data: { userId: user.userId, inviteId: command.inviteId, changedAt: at } }];
    }
    case 'ChangePassword':
      if (!state.users[command.userId]?.created) reject('user_not_found');
      return [{ type: 'PasswordChanged', data: { userId: command.userId, inviteId: null, changedAt: command.now.toISOString() } }];
    case 'RecordSignIn':
      if (!state.users[command.userId]?.created) reject('user_not_found');
      return [
        {
          type: 'UserSignedIn',
          data: { userId: command.userId, address: command.address, sessionRef: command.sessionRef, signedInAt: command.now.toISOString() },
        },
      ];
    case 'RecordSignInFailure':
      if (!state.users[command.userId]) reject('user_not_found');
      return [
        {
          type: 'UserSignInFailed',
          data: { userId: command.userId, address: command.address, reason: command.reason, failedAt: command.now.toISOString() },
        },
      ];
    case 'ChooseDefaultModel':
      if (command.model === state.defaultModel) return [];
      return [{ type: 'AccountDefaultModelChosen', data: { model: command.model, chosenAt: command.now.toISOString() } }];
  }
}

export function foldAccount(events: readonly AccountEvent[]): AccountState {
  return events.reduce(evolveAccount, initialAccountState());
}
