import pino from "pino";
import { RetryableError } from "../../services/errors.js";
import type { JsonObject } from "../../services/json.js";
import type { Job } from "../../services/store/jobs/jobRows.js";
import type { JobsRepository } from "../../services/store/jobs/jobsRepository.js";
import type { JobContext, JobHandler } from "../../services/worker/jobs/handler.js";
import { JobRunner, type JobRunnerOptions } from "../../services/worker/jobs/runner.js";
import { until as pollUntil, type Probe } from "../support/polling.js";

export const log = pino({ level: "silent" });

/** Short leases and waits, so that takeovers and retries happen within a test. */
export const FAST: Omit<JobRunnerOptions, "log"> = {
  concurrency: 2,
  maxAttempts: 3,
  leaseMs: 3_000,
  heartbeatMs: 150,
  settleMs: 600,
  pollMs: 100,
  retryBaseMs: 50,
  retryMaxMs: 200,
  shutdownGraceMs: 1_000,
};

/** `until` at the jobs' pace: a probe every 50 ms, as the leases and heartbeats above are short. */
export const until = <T>(probe: Probe<T>, timeoutMs?: number): Promise<T> => pollUntil(probe, { timeoutMs, everyMs: 50 });

/** One call of a handler: which job, which attempt, on which runner. */
export interface Invocation {
  readonly jobId: string;
  readonly attempt: number;
  readonly runner: string;
}

/**
 * The small job of the tests: counts to `to`, one `step` event per number. `fail:
 * "permanent"` throws a plain error; `flaky: K` throws a RetryableError on attempts 1..K.
 * `stepMs` waits between steps, honouring the abort signal. `gate` names a promise the job
 * waits for before counting.
 */
export function countingJob(runner: string, invocations: Invocation[], gates: Map<string, Promise<void>> = new Map()): JobHandler {
  return async (input: JsonObject, ctx: JobContext) => {
    invocations.push({ jobId: ctx.jobId, attempt: ctx.attempt, runner });
    if (input.fail === "permanent") throw new Error(`cannot count to ${String(input.to)}`);
    if (typeof input.flaky === "number" && ctx.attempt <= input.flaky) throw new RetryableError(`flaky on attempt ${ctx.attempt}`);
    if (typeof input.gate === "string") await gates.get(input.gate);
    const to = Number(input.to);
    for (let n = 1; n <= to; n++) {
      ctx.signal.throwIfAborted();
      await ctx.progress({ type: "step", data: { n } });
      if (typeof input.stepMs === "number") await abortableSleep(input.stepMs, ctx.signal);
    }
    return { counted: to };
  };
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done, fail) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      fail(signal.reason);
    }, { once: true });
  });
}

export function countingRunner(jobs: JobsRepository, name: string, invocations: Invocation[], options: Partial<JobRunnerOptions> = {}, gates?: Map<string, Promise<void>>): JobRunner {
  const runner = new JobRunner(jobs, { ...FAST, log, ...options });
  runner.register("count", countingJob(name, invocations, gates));
  return runner;
}

export function ended(jobs: JobsRepository, id: string, timeoutMs?: number): Promise<Job> {
  return until(async () => {
    const job = await jobs.get(id);
    return job && (job.status === "completed" || job.status === "failed") ? job : null;
  }, timeoutMs);
}
