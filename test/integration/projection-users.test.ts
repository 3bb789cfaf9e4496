// The users read model on its own: a user per invite's user, its setup links, and what the
// sign-in facts change.
import { describe, test } from 'node:test';
import { usersProjection } from '../../projections/users.ts';
import { projectionSpec } from '../support/projection-spec.ts';

const spec = await projectionSpec(usersProjection);
const A = 'a0000000-0000-4000-8000-000000000001';
const U = 'b0000000-0000-4000-8000-000000000001';
const I1 = 'd0000000-0000-4000-8000-000000000001';
const I2 = 'd0000000-0000-4000-8000-000000000002';
const stream = `account-${A}`;

describe('users projection', () => {
  test('invited, created, failed, signed in, reset by a second link; replay from zero gives the same rows', async () => {
    await spec.given([
      {
        streamId: stream,
        type: 'UserInvited',
        data: {
          userId: U,
          email: 'ada@example.org',
          inviteId: I1,
          tokenSha256: 't1',
          invitedAt: '2026-11-01T09:00:00.000Z',
          expiresAt: '2026-11-04T09:00:00.000Z',
        },
      },
      {
        streamId: stream,
        type: 'UserCreated',
        data: { userId: U, email: 'ada@example.org', inviteId: I1, createdAt: '2026-11-01T10:00:00.000Z' },
      },
      {
        streamId: stream,
        type: 'UserSignInFailed',
        data: { userId: U, address: '203.0.113.1', reason: 'wrong_password', failedAt: '2026-11-01T11:00:00.000Z' },
      },
      {
        streamId: stream,
        type: 'UserSignInFailed',
        data: { userId: U, address: '203.0.113.1', reason: 'wrong_password', failedAt: '2026-11-01T11:01:00.000Z' },
      },
      {
        streamId: stream,
        type: 'UserSignedIn',
        data: { userId: U, address: '203.0.113.1', sessionRef: 'abc', signedInAt: '2026-11-01T11:02:00.000Z' },
      },
      {
        streamId: stream,
        type: 'UserSignInFailed',
        data: { userId: U, address: '203.0.113.2', reason: 'wrong_password', failedAt: '2026-11-01T12:00:00.000Z' },
      },
      {
        streamId: stream,
        type: 'UserInvited',
        data: {
          userId: U,
          email: 'ada@example.org',
          inviteId: I2,
          tokenSha256: 't2',
          invitedAt: '2026-11-02T09:00:00.000Z',
          expiresAt: '2026-11-05T09:00:00.000Z',
        },
      },
      { streamId: stream, type: 'PasswordChanged', data: { userId: U, inviteId: I2, changedAt: '2026-11-02T10:00:00.000Z' } },
    ]);
    await spec.thenRows('portal_users', 'user_id', [
      {
        user_id: U,
        account_id: A,
        email: 'ada@example.org',
        invited_at: '2026-11-01T09:00:00.000Z',
        created_at: '2026-11-01T10:00:00.000Z',
        password_changed_at: '2026-11-02T10:00:00.000Z',
        last_sign_in_at: '2026-11-01T11:02:00.000Z',
        failed_sign_ins: 0,
      },
    ]);
    await spec.thenRows('portal_invites', 'invited_at', [
      { invite_id: I1, user_id: U, account_id: A, token_sha256: 't1', used_at: '2026-11-01T10:00:00.000Z' },
      { invite_id: I2, user_id: U, account_id: A, token_sha256: 't2', used_at: '2026-11-02T10:00:00.000Z' },
    ]);
    await spec.replayFromZero();
  });
});
