import { pino, type Logger } from 'pino';
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

/** JSON lines to stdout, or to stderr (`toStderr`) where stdout carries a command's output. */
export function createLogger(level: LogLevel, options: { name?: string; toStderr?: boolean } = {}): Logger {
  const settings = { name: options.name ?? 'hwr', level, redact: { paths: REDACT, censor: '[redacted]' } };
  return options.toStderr ? pino(settings, pino.destination(2)) : pino(settings);
}

export type { Logger };
