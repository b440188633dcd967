/**
 * Typed errors, classified by type only. Each maps to one HTTP answer in the HTTP layer.
 */
export interface ValidationIssue {
  readonly loc: (string | number)[];
  readonly msg: string;
  readonly type: string;
}

/** Bad input: 422 with the `detail` shape; never retried. */
export class ValidationError extends Error {
  constructor(readonly detail: ValidationIssue[]) {
    super(detail.map((d) => `${d.loc.join(".")}: ${d.msg}`).join("; "));
  }

  static at(loc: (string | number)[], msg: string, type = "value_error"): ValidationError {
    return new ValidationError([{ loc, msg, type }]);
  }
}

/** Any other permanent client error with a status of its own (400, 404, 409, 413, 415). */
export class ClientError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export class UnauthorizedError extends Error {}
export class ForbiddenError extends Error {}

/** Try again later: the store or the queue cannot take the data now (503 + Retry-After). */
export class RetryableError extends Error {
  constructor(message: string, readonly retryAfterSeconds = 1) {
    super(message);
  }
}

/** Bounded buffers are full: answered at once with 429 + Retry-After, nothing kept. */
export class QueueFullError extends RetryableError {}
