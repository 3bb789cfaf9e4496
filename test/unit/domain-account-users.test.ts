// Portal users in the account decider: invites, a setup link used once and only before it
// expires, password changes, sign-in facts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decideAccount, evolveAccount, initialAccountState, type AccountCommand } from '../../domain/account.ts';
import type { AccountEvent } from '../../domain/events.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const account = deciderSpec({ decide: decideAccount, evolve: evolveAccount, initialState: initialAccountState });
const now = new Date('2026-11-01T00:00:00Z');
const at = now.toISOString();
const later = new Date('2026-11-02T00:00:00Z');
const expiresAt = new Date('2026-11-04T00:00:00Z');
const created: AccountEvent = {
  type: 'AccountCreated',
  data: { accountId: 'a1', name: 'archive', createdAt: at, webhookSecretSha256: 'f1' },
};
const invite: AccountCommand = {
  type: 'InviteUser',
  userId: 'u1',
  email: 'ada@example.org',
  inviteId: 'i1',
  tokenSha256: 't1',
  expiresAt,
  now,
};
const invited: AccountEvent = {
  type: 'UserInvited',
  data: { userId: 'u1', email: 'ada@example.org', inviteId: 'i1', tokenSha256: 't1', invitedAt: at, expiresAt: expiresAt.toISOString() },
};
const setup = (inviteId: string, when = later): AccountCommand => ({ type: 'CompleteSetup', userId: 'u1', inviteId, now: when });
const userCreated: AccountEvent = {
  type: 'UserCreated',
  data: { userId: 'u1', email: 'ada@example.org', inviteId: 'i1', createdAt: later.toISOString() },
};

describe('decideAccount: portal users', () => {
  test('an invite needs the account; one email is one user of the account', () => {
    account.given().when(invite).thenRejects('account_not_found');
    account.given([created]).when(invite).then([invited]);
    account
      .given([created, invited])
      .when({ ...invite, userId: 'u2', inviteId: 'i2' })
      .thenRejects('user_already_exists');
    account
      .given([created, invited])
      .when({ ...invite, email: 'other@example.org', inviteId: 'i2' })
      .thenRejects('user_already_exists');
  });

  test('the setup link creates the user once; used, expired or unknown links are refused', () => {
    const state = account.given([created, invited]).when(setup('i1')).then([userCreated]);
    assert.equal(state.users.u1.created, true);
    account.given([created, invited, userCreated]).when(setup('i1')).thenRejects('invite_used');
    account.given([created, invited]).when(setup('i1', expiresAt)).thenRejects('invite_expired');
    account.given([created, invited]).when(setup('nope')).thenRejects('invite_not_found');
  });

  test('a second invite of a created user is a password reset: PasswordChanged with its invite', () => {
    const reinvited: AccountEvent = { ...invited, data: { ...invited.data, inviteId: 'i2', tokenSha256: 't2' } } as AccountEvent;
    account
      .given([created, invited, userCreated])
      .when({ ...invite, inviteId: 'i2', tokenSha256: 't2' })
      .then([reinvited]);
    account
      .given([created, invited, userCreated, reinvited])
      .when(setup('i2'))
      .then([{ type: 'PasswordChanged', data: { userId: 'u1', inviteId: 'i2', changedAt: later.toISOString() } }]);
  });

  test('sign-in facts: a success needs a created user; a failure is recorded for an invited one too', () => {
    const signIn: AccountCommand = { type: 'RecordSignIn', userId: 'u1', address: '203.0.113.1', sessionRef: 'abc', now };
    account.given([created, invited]).when(signIn).thenRejects('user_not_found');
    account
      .given([created, invited, userCreated])
      .when(signIn)
      .then([{ type: 'UserSignedIn', data: { userId: 'u1', address: '203.0.113.1', sessionRef: 'abc', signedInAt: at } }]);
    account
      .given([created, invited])
      .when({ type: 'RecordSignInFailure', userId: 'u1', address: '203.0.113.1', reason: 'no_password', now })
      .then([{ type: 'UserSignInFailed', data: { userId: 'u1', address: '203.0.113.1', reason: 'no_password', failedAt: at } }]);
    account.given([created]).when({ type: 'ChangePassword', userId: 'u1', now }).thenRejects('user_not_found');
  });

  test('a new setup link ends the older unused ones', () => {
    const second: AccountEvent = {
      ...invited,
      data: { ...invited.data, inviteId: 'i2', tokenSha256: 't2', invitedAt: later.toISOString() },
    } as AccountEvent;
    const state = account.given([created, invited, second]).state;
    assert.equal(state.users.u1.invites.i1.expiresAt, later.toISOString());
    account
      .given([created, invited, second])
      .when(setup('i1', new Date(later.getTime() + 1)))
      .thenRejects('invite_expired');
    account
      .given([created, invited, second])
      .when(setup('i2', new Date(later.getTime() + 1)))
      .then([
        {
          ...userCreated,
          data: { ...userCreated.data, inviteId: 'i2', createdAt: new Date(later.getTime() + 1).toISOString() },
        } as AccountEvent,
      ]);
  });
});
