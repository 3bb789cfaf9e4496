// The webhook address rules (docs/callbacks.md): checked when a job is submitted and again
// at every delivery, where the addresses checked are the ones connected to.
import { lookup as dnsLookup } from 'node:dns/promises';
import net from 'node:net';
import { CodedError, type ErrorCatalog } from '../../domain/errors.ts';
import { classifyAddress } from './ip-address.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (like getaddrinfo, /etc/hosts included). */
export type WebhookLookup = (hostname: string) => Promise<ResolvedAddress[]>;

export interface WebhookUrlOptions {
  /** WEBHOOK_ALLOW_HTTP: accept http:// as well as https:// (local development, tests). */
  allowHttp: boolean;
  /** WEBHOOK_ALLOW_PRIVATE: accept hosts that resolve to non-public addresses (local development, tests). */
  allowPrivate: boolean;
  /** Replaces DNS resolution (tests; a custom resolver). */
  lookup?: WebhookLookup;
}

export interface WebhookTarget {
  url: URL;
  /** The host as a connection needs it (IPv6 without brackets). */
  hostname: string;
  /** Every address the host resolved to, all of them checked. */
  addresses: ResolvedAddress[];
}

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** The one code of a refused webhook address: 400 at submission; at delivery, the attempt fails with it. */
export const WEBHOOK_URL_ERRORS = {
  invalid_webhook_url: { status: 400, retryable: false, title: 'Invalid webhook URL' },
} as const satisfies ErrorCatalog<string, 400>;

export class WebhookUrlError extends CodedError<keyof typeof WEBHOOK_URL_ERRORS, 400> {
  readonly title = WEBHOOK_URL_ERRORS.invalid_webhook_url.title;
  readonly detail: string;

  constructor(detail: string, options?: { cause?: unknown; setting?: string }) {
    super('invalid_webhook_url', WEBHOOK_URL_ERRORS.invalid_webhook_url, detail, options);
    this.name = 'WebhookUrlError';
    this.detail = detail;
  }
}

export function isWebhookUrlError(error: unknown): error is WebhookUrlError {
  return error instanceof WebhookUrlError;
}

export const systemLookup: WebhookLookup = async (hostname) => {
  const results = await dnsLookup(hostname, { all: true, verbatim: true });
  return results.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

/** Checks a webhook URL and resolves its host; throws WebhookUrlError (code invalid_webhook_url). */
export async function resolveWebhookTarget(raw: string, options: WebhookUrlOptions): Promise<WebhookTarget> {
  if (typeof raw !== 'string' || raw.trim() === '') throw new WebhookUrlError('webhook_url is empty');
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw new WebhookUrlError(`webhook_url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError('webhook_url is not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && options.allowHttp)) {
    throw options.allowHttp
      ? new WebhookUrlError('webhook_url must be an http or https URL')
      : new WebhookUrlError('webhook_url must be an https URL; this service does not call plain http addresses', {
          setting: 'WEBHOOK_ALLOW_HTTP',
        });
  }
  if (url.username !== '' || url.password !== '') throw new WebhookUrlError('webhook_url must not contain a user name or password');
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  if (hostname === '') throw new WebhookUrlError('webhook_url has no host');

  let addresses: ResolvedAddress[];
  const literal = net.isIP(hostname);
  if (literal !== 0) {
    addresses = [{ address: hostname, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await (options.lookup ?? systemLookup)(hostname);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException)?.code;
      throw new WebhookUrlError(`webhook_url host ${hostname} does not resolve${code ? ` (${code})` : ''}`, { cause: error });
    }
    if (addresses.length === 0) throw new WebhookUrlError(`webhook_url host ${hostname} does not resolve`);
  }

  if (!options.allowPrivate) {
    for (const { address } of addresses) {
      const verdict = classifyAddress(address);
      if (!verdict.allowed) {
        const what = literal !== 0 ? `host ${address} is` : `host ${hostname} resolves to ${address},`;
        throw new WebhookUrlError(`webhook_url ${what} ${verdict.reason}; only public addresses are accepted`, {
          setting: 'WEBHOOK_ALLOW_PRIVATE',
        });
      }
    }
  }
  return { url, hostname, addresses };
}

/** The submission-time check: the normalised URL, or a WebhookUrlError. */
export async function checkWebhookUrl(raw: string, options: WebhookUrlOptions): Promise<URL> {
  return (await resolveWebhookTarget(raw, options)).url;
}
