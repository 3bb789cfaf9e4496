-- The customer portal (docs/portal.md). Read models of the users projection (projections/users.ts):
-- portal_users and portal_invites, kept from the account streams' user events. Operational tables,
-- not events: password hashes, sessions and sign-in attempts (the log records the facts about
-- them: UserCreated, PasswordChanged, UserSignedIn, UserSignInFailed).

create table portal_users (
  user_id             uuid primary key,
  account_id          uuid        not null,
  email               text        not null unique,
  invited_at          timestamptz not null,
  created_at          timestamptz,
  password_changed_at timestamptz,
  last_sign_in_at     timestamptz,
  failed_sign_ins     integer     not null
);
create index portal_users_account on portal_users (account_id);

create table portal_invites (
  invite_id    uuid primary key,
  user_id      uuid        not null,
  account_id   uuid        not null,
  token_sha256 text        not null unique,
  invited_at   timestamptz not null,
  expires_at   timestamptz not null,
  used_at      timestamptz
);

-- scrypt hash in PHC-like form (src/portal/passwords.ts); written with the event that sets it.
create table portal_passwords (
  user_id       uuid primary key,
  password_hash text        not null,
  updated_at    timestamptz not null default now()
);

-- Server-side sessions: the cookie holds a random id, this table its SHA-256.
create table portal_sessions (
  session_sha256 text primary key,
  user_id        uuid        not null,
  account_id     uuid        not null,
  csrf_token     text        not null,
  address        text        not null,
  created_at     timestamptz not null default now(),
  last_seen_at   timestamptz not null default now(),
  expires_at     timestamptz not null,
  revoked_at     timestamptz
);
create index portal_sessions_user on portal_sessions (user_id);

-- Sign-in attempts, for throttling per email and per address (kept a day).
create table portal_sign_in_attempts (
  attempted_at timestamptz not null default now(),
  email        text        not null,
  address      text        not null,
  ok           boolean     not null
);
create index portal_sign_in_attempts_email on portal_sign_in_attempts (email, attempted_at);
create index portal_sign_in_attempts_address on portal_sign_in_attempts (address, attempted_at);
