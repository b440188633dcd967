import type { JsonObject, JsonValue } from "../../json.js";

/** What a running job reports, appended to its events in order. */
export interface JobProgress {
  readonly type: string;
  readonly data: JsonObject;
}

/** Event types the runner writes itself when a job ends; a handler cannot report them. */
export const JOB_COMPLETED = "job_completed";
export const JOB_FAILED = "job_failed";

export interface JobContext {
  readonly jobId: string;
  /** From 1; a job resumed after its runner stopped keeps its number, a retried one takes the next. */
  readonly attempt: number;
  /**
   * Aborted when the run must stop: the runner is shutting down, or another runner took
   * the job over. `signal.reason` is a JobInterruptedError; throw it (or anything): the job
   * is not failed, it runs again later. A handler that returns anyway is recorded as completed.
   */
  readonly signal: AbortSignal;
  /** Appends an event; resolves once it is stored. Refused once the run was interrupted. */
  progress(event: JobProgress): Promise<void>;
}

/**
 * Runs one job. Resolves with the output (recorded as completed). Throwing a
 * RetryableError retries the job with backoff while attempts are left; any other error
 * fails it at once with the error's message.
 */
export type JobHandler = (input: JsonObject, context: JobContext) => Promise<JsonValue>;
