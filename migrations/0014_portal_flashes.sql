-- The portal's one-time messages across a redirect (Post/Redirect/Get, docs/portal.md): a form's
-- POST stores what the page after it shows once (a new API key, a refusal's message and status),
-- and answers 303; the GET of that page takes it (deletes and returns it). Bound to the browser
-- that posted: `owner_sha256` is a hash of its session cookie (or, signed out, of its CSRF cookie),
-- and `sealed` is AES-256-GCM under a key derived from that cookie, which the server never stores,
-- so a one-time key is never at rest in clear. Short-lived (minutes); expired rows are deleted with
-- every insert. An operational table, not events.
create table portal_flashes (
  flash_id     bigint generated always as identity primary key,
  owner_sha256 text        not null,
  path         text        not null,
  sealed       bytea       not null,
  created_at   timestamptz not null default now(),
  expires_at   timestamptz not null
);
create index portal_flashes_owner on portal_flashes (owner_sha256, path);
create index portal_flashes_expiry on portal_flashes (expires_at);
