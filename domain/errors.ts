// One shape for every error that crosses a boundary of the service: a client's request, an
// upload, a page task, an export. Each carries a stable `code` (clients, workers and tests
// branch on it), a `message` for people, the HTTP `status` the code answers with where it has
// one (null: the code never is an HTTP answer of its own, e.g. a page failure that reaches the
// client inside a failed job's `error_message`), and `retryable`: whether the same request or
// task, sent again unchanged, may succeed (a worker fails a page at once on `retryable: false`).
// Each boundary lists its codes once, in a catalog (code → status, retryable), so every code's
// status and retryability are decided in one place; docs/contract.md, "Error codes", lists them.

export interface ErrorSpec<Status extends number | null = number | null> {
  /** The HTTP status the code answers with; null where it never is an HTTP answer. */
  readonly status: Status;
  /** Whether the same request or task, sent again unchanged, may succeed. */
  readonly retryable: boolean;
  /** A short summary for problem+json `title`, where the boundary names one. */
  readonly title?: string;
}

/** A boundary's codes, each with its status and retryability. */
export type ErrorCatalog<Code extends string = string, Status extends number | null = number | null> = {
  readonly [C in Code]: ErrorSpec<Status>;
};

/** The shape every boundary error has (an HTTP problem body carries the same four, plus its RFC 9457 members). */
export interface ErrorShape {
  readonly code: string;
  readonly message: string;
  readonly status: number | null;
  readonly retryable: boolean;
}

/** The base of every boundary error: its code's status and retryability come from the boundary's catalog. */
export class CodedError<Code extends string = string, Status extends number | null = number | null> extends Error implements ErrorShape {
  readonly code: Code;
  readonly status: Status;
  readonly retryable: boolean;
  /**
   * The server setting (an environment variable, e.g. `MAX_PAGES`) behind a refusal, for the
   * operator's log: the message, which clients and customers read, says the limit in their words
   * and never names the setting (they can neither see nor change it).
   */
  readonly setting: string | undefined;

  constructor(code: Code, spec: ErrorSpec<Status>, message: string, options?: { cause?: unknown; setting?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = spec.status;
    this.retryable = spec.retryable;
    this.setting = options?.setting;
  }
}

export function isCodedError(error: unknown): error is CodedError {
  return error instanceof CodedError;
}
