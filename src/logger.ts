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

export function createLogger(level: LogLevel, name = 'hwr'): Logger {
  return pino({ name, level, redact: { paths: REDACT, censor: '[redacted]' } });
}

export type { Logger };
