// One-time messages across a redirect (Post/Redirect/Get, docs/portal.md): every form's POST
// answers 303, and what the page after it must show once (a new API key, the webhook secret, a
// refusal's message and status) waits here until that page's GET takes it. Server-side, so that
// any API process can show it (the API keeps no state of its own), in portal_flashes (migration
// 0014, through use-cases/users/sql/), bound to the browser that posted: looked up by a hash of its
// cookie (the session's, or signed out the CSRF cookie's) and sealed with AES-256-GCM under a key
// derived from that cookie, which the server never stores, so a one-time key is not at rest in
// clear and no other browser can read it.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Queryable } from '../db/database.ts';
import { insertFlash } from '../use-cases/users/sql/insert-flash.ts';
import { takeFlashes } from '../use-cases/users/sql/take-flashes.ts';

/** Long enough for any redirect to be followed, short enough that a key left unshown is gone soon. */
const FLASH_LIFETIME_MS = 2 * 60 * 1000;

export interface Flash {
  /** The message the page shows. */
  notice?: { kind: 'ok' | 'error'; text: string };
  /** The status the page answers with: the refusal's (401, 403, 429…), 200 when absent. */
  status?: number;
  /** Retry-After of a refusal for the moment. */
  retryAfter?: string;
  /** A secret shown once: a new API key, the webhook secret. */
  secret?: { heading: string; value: string };
  /** The sign-in form's email, filled in again after a refusal. */
  email?: string;
}

const lookupHash = (owner: string): string => createHash('sha256').update(`hwr portal flash owner\0${owner}`).digest('hex');
const sealingKey = (owner: string): Buffer => Buffer.from(hkdfSync('sha256', owner, 'hwr portal flash', 'aes-256-gcm sealing key', 32));

/** Keeps `flash` for the next GET of `path` by the browser holding the cookie value `owner`. */
export async function putFlash(db: Queryable, owner: string, path: string, flash: Flash): Promise<void> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(owner), iv);
  cipher.setAAD(Buffer.from(path, 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify(flash), 'utf8'), cipher.final()]);
  await insertFlash(db, lookupHash(owner), path, Buffer.concat([iv, cipher.getAuthTag(), body]), FLASH_LIFETIME_MS);
}

/** What was kept for `path` and this `owner` (later flashes win field by field), taken: shown once. */
export async function takeFlash(db: Queryable, owner: string, path: string): Promise<Flash> {
  let flash: Flash = {};
  for (const sealed of await takeFlashes(db, lookupHash(owner), path)) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', sealingKey(owner), sealed.subarray(0, 12));
      decipher.setAAD(Buffer.from(path, 'utf8'));
      decipher.setAuthTag(sealed.subarray(12, 28));
      const text = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
      flash = { ...flash, ...(JSON.parse(text) as Flash) };
    } catch {
      // Not sealed for this cookie (a lookup-hash collision, which 256 bits rule out in practice): not shown.
    }
  }
  return flash;
}
