/**
 * Every typed error of the service, classified by type only (never by message). Each maps
 * to one HTTP answer in the HTTP layer (`errorAnswer` in http/app.ts):
 *
 * | error                         | answer                     | retried by clients |
 * |-------------------------------|----------------------------|--------------------|
 * | ValidationError (and below)   | 422 `{detail: [...]}`      | never              |
 * | ClientError                   | its status (400/404/409/413/415) | never        |
 * | UnauthorizedError             | 401                        | never              |
 * | ForbiddenError                | 403                        | never              |
 * | QueueFullError                | 429 + Retry-After          | yes                |
 * | RetryableError (and below)    | 503 + Retry-After          | yes                |
 * | StoreQueryError, anything else| 500                        | no                 |
 */
export interface ValidationIssue {
  readonly loc: (string | number)[];
  readonly msg: string;
  readonly type: string;
}

/** Bad input: 422 with the `detail` shape; never retried. */
export class ValidationError extends Error {
  constructor(readonly detail: ValidationIssue[], message = detail.map((d) => `${d.loc.join(".")}: ${d.msg}`).join("; ")) {
    super(message);
  }

  static at(loc: (string | number)[], msg: string, type = "value_error"): ValidationError {
    return new ValidationError([{ loc, msg, type }]);
  }
}

/** A field a filter or sort names is not one the queried resource has. */
export class InvalidFieldError extends ValidationError {
  constructor(message: string, loc: (string | number)[] = ["body", "query"]) {
    super([{ loc, msg: message, type: "value_error" }], message);
  }
}

/** A query expression that cannot be compiled (wrong operand types, nesting, unknown operator). */
export class InvalidQueryError extends ValidationError {
  constructor(message: string, loc: (string | number)[] = ["body", "query"]) {
    super([{ loc, msg: message, type: "value_error" }], message);
  }
}

/** A value that is not JSON (or nests too deep), met while converting. */
export class NotJsonError extends ValidationError {
  constructor(message: string) {
    super([{ loc: ["body"], msg: message, type: "value_error" }], message);
  }
}

/** A value that cannot be digested as asked (a table row that is not an object). */
export class DigestInputError extends ValidationError {
  constructor(message: string) {
    super([{ loc: ["body"], msg: message, type: "value_error" }], message);
  }
}

/** A string that is not a well-formed weave:/// ref, or a ref value that cannot be written as one. */
export class RefParseError extends ValidationError {
  constructor(readonly ref: string, readonly reason: string) {
    const message = `invalid weave ref ${JSON.stringify(ref.length > 200 ? `${ref.slice(0, 200)}…` : ref)}: ${reason}`;
    super([{ loc: ["body"], msg: message, type: "value_error" }], message);
  }
}

/** Any other permanent client error with a status of its own (400, 404, 409, 413, 415). */
export class ClientError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Bad JSON text (400); `position` is the offset (in UTF-16 code units) where reading stopped. */
export class JsonParseError extends ClientError {
  constructor(readonly reason: string, readonly position: number) {
    super(400, `Invalid JSON at position ${position}: ${reason}`);
  }
}

/**
 * The values of a request make a statement longer than ClickHouse parses (`max_query_size`),
 * e.g. an id of megabytes: 413, the request is refused before it is sent.
 */
export class QueryTooLargeError extends ClientError {
  constructor(bytes: number, limit: number) {
    super(413, `the values of this request make a query of ${bytes} bytes, over the ${limit} bytes ClickHouse parses: send shorter values or fewer of them`);
  }
}

export class NotFoundError extends ClientError {
  constructor(message: string) {
    super(404, message);
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

/** ClickHouse cannot be reached or is overloaded: a transport failure or a retryable server code. */
export class StoreUnavailableError extends RetryableError {
  constructor(message: string) {
    super(message, 2);
  }
}

/** ClickHouse refused a statement with a permanent server error code: a fault of ours, not retried. */
export class StoreQueryError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/**
 * A job's run was stopped before it ended: its runner is shutting down or lost its claim.
 * The job is not failed: it is run again, by this runner or another (the `reason` of a
 * job's abort signal).
 */
export class JobInterruptedError extends Error {}

/** An error's message for a log line or an answer, whatever was thrown. */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
