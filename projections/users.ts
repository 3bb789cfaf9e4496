import type { Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

// Portal users and their setup links (docs/portal.md), from the account streams.
export const usersProjection: Projection = {
  name: 'users',
  tables: ['portal_users', 'portal_invites'],
  handles: ['UserInvited', 'UserCreated', 'PasswordChanged', 'UserSignedIn', 'UserSignInFailed'],
  apply: `
declare
  account uuid := substring(e.stream_id from 9)::uuid;
  uid uuid := (e.data->>'userId')::uuid;
begin
  case e.type
  when 'UserInvited' then
    insert into portal_users (user_id, account_id, email, invited_at, failed_sign_ins)
    values (uid, account, e.data->>'email', (e.data->>'invitedAt')::timestamptz, 0)
    on conflict (user_id) do nothing;
    -- A new setup link ends the user's older unused ones.
    update portal_invites set expires_at = (e.data->>'invitedAt')::timestamptz
      where user_id = uid and used_at is null and expires_at > (e.data->>'invitedAt')::timestamptz;
    insert into portal_invites (invite_id, user_id, account_id, token_sha256, invited_at, expires_at)
    values ((e.data->>'inviteId')::uuid, uid, account, e.data->>'tokenSha256',
      (e.data->>'invitedAt')::timestamptz, (e.data->>'expiresAt')::timestamptz);
  when 'UserCreated' then
    update portal_users set created_at = (e.data->>'createdAt')::timestamptz,
      password_changed_at = (e.data->>'createdAt')::timestamptz, failed_sign_ins = 0 where user_id = uid;
    update portal_invites set used_at = (e.data->>'createdAt')::timestamptz where invite_id = (e.data->>'inviteId')::uuid;
  when 'PasswordChanged' then
    update portal_users set password_changed_at = (e.data->>'changedAt')::timestamptz, failed_sign_ins = 0 where user_id = uid;
    if e.data->'inviteId' <> 'null'::jsonb then
      update portal_invites set used_at = (e.data->>'changedAt')::timestamptz where invite_id = (e.data->>'inviteId')::uuid;
    end if;
  when 'UserSignedIn' then
    update portal_users set last_sign_in_at = (e.data->>'signedInAt')::timestamptz, failed_sign_ins = 0 where user_id = uid;
  when 'UserSignInFailed' then
    update portal_users set failed_sign_ins = failed_sign_ins + 1 where user_id = uid;
  end case;
end`,
};

// Reads of this read model: sign-in, setup links, `hwr users list`.

export interface UserRow {
  user_id: string;
  account_id: string;
  email: string;
  invited_at: Date;
  created_at: Date | null;
  password_changed_at: Date | null;
  last_sign_in_at: Date | null;
  failed_sign_ins: number;
}

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  return (await db.query<UserRow>('select * from portal_users where email = $1', [email])).rows[0];
}

export async function findUser(db: Queryable, userId: string): Promise<UserRow | undefined> {
  return (await db.query<UserRow>('select * from portal_users where user_id = $1', [userId])).rows[0];
}

export async function listAccountUsers(db: Queryable, accountId: string): Promise<UserRow[]> {
  return (await db.query<UserRow>('select * from portal_users where account_id = $1 order by invited_at, user_id', [accountId])).rows;
}

export interface InviteRow {
  invite_id: string;
  user_id: string;
  account_id: string;
  email: string;
  expires_at: Date;
  used_at: Date | null;
}

export async function findInviteByTokenHash(db: Queryable, tokenSha256: string): Promise<InviteRow | undefined> {
  const result = await db.query<InviteRow>(
    `select i.invite_id, i.user_id, i.account_id, u.email, i.expires_at, i.used_at
     from portal_invites i join portal_users u using (user_id) where i.token_sha256 = $1`,
    [tokenSha256],
  );
  return result.rows[0];
}
