import { pino, type DestinationStream, type Logger } from 'pino';
import { redactUrl } from '../shared/redact-url.ts';
import type { LogLevel } from './config.ts';

// Secrets never reach the logs, whatever an object carries.
const REDACT = [
  'apiKey',
  'api_key',
  'key',
  'secret',
  'webhook_secret',
  'webhookSecret',
  'password',
  'authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
];

// Webhook URLs wherever an object carrying one is logged (a job's options, a task's data): the
// query string and user info replaced (src/shared/redact-url.ts), the host and path kept.
const REDACT_URL = [
  'webhookUrl',
  'webhook_url',
  'options.webhookUrl',
  'options.webhook_url',
  '*.webhookUrl',
  '*.webhook_url',
  '*.options.webhookUrl',
];
const URL_KEYS = new Set(['webhookUrl', 'webhook_url']);

/** JSON lines to stdout, or to stderr (`toStderr`) where stdout carries a command's output; `destination` for tests. */
export function createLogger(
  level: LogLevel,
  options: { name?: string; toStderr?: boolean; destination?: DestinationStream } = {},
): Logger {
  const settings = {
    name: options.name ?? 'hwr',
    level,
    redact: {
      paths: [...REDACT, ...REDACT_URL],
      censor: (value: unknown, path: string[]) => (URL_KEYS.has(path.at(-1) ?? '') ? redactUrl(value) : '[redacted]'),
    },
  };
  if (options.destination) return pino(settings, options.destination);
  return options.toStderr ? pino(settings, pino.destination(2)) : pino(settings);
}

export type { Logger };
