// Callback signatures: lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the
// account's webhook secret as written (its UTF-8 bytes), sent in X-SVC-Signature.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-SVC-Signature';

function hmac(secret: string, body: Buffer | string): Buffer {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest();
}

export function signCallbackBody(secret: string, body: Buffer | string): string {
  return hmac(secret, body).toString('hex');
}

/**
 * Whether `signature` (the X-SVC-Signature value) signs `body`. Compare over the raw bytes as
 * received, never a re-serialised JSON. Constant time in the signature's content.
 */
export function verifyCallbackSignature(secret: string, body: Buffer | string, signature: string | null | undefined): boolean {
  if (typeof signature !== 'string' || !/^[0-9a-fA-F]{64}$/.test(signature)) return false;
  return timingSafeEqual(hmac(secret, body), Buffer.from(signature, 'hex'));
}
