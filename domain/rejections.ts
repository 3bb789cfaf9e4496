// Typed refusals of a command by `decide`. `code` is stable and reaches clients.
export const REJECTION_CODES = {
  job_not_found: 'The job does not exist.',
  job_already_exists: 'A job with this id already exists.',
  job_already_finished: 'The job has already finished (done or failed).',
  job_cancelled: 'The job was cancelled.',
  job_not_started: 'The job has not started processing.',
  job_not_done: 'The job is not done.',
  pages_incomplete: 'Not every page of the job is complete.',
  unknown_page: 'The job has no such page.',
  result_not_expired: 'The result has not reached its expiry time.',
  no_callback: 'The job has no webhook_url or its delivery has ended.',
  account_not_found: 'The account does not exist.',
  account_already_exists: 'The account already exists.',
  key_not_found: 'The API key does not exist.',
  key_already_exists: 'An API key with this id already exists.',
  user_not_found: 'The user does not exist.',
  user_already_exists: 'A user with this id or email already exists.',
  invite_not_found: 'The setup link does not exist.',
  invite_used: 'The setup link has already been used.',
  invite_expired: 'The setup link has expired.',
} as const;

export type RejectionCode = keyof typeof REJECTION_CODES;

export class Rejection extends Error {
  readonly code: RejectionCode;

  constructor(code: RejectionCode, detail?: string) {
    super(detail ?? REJECTION_CODES[code]);
    this.name = 'Rejection';
    this.code = code;
  }
}

export function reject(code: RejectionCode, detail?: string): never {
  throw new Rejection(code, detail);
}
