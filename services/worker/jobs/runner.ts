/**
 * The job runner: runs long jobs (evaluations, call scoring, training) submitted on the
 * jobs topic, keeping their state, events and ends in ClickHouse (store/jobs).
 *
 * The protocol, for anything that submits, runs or reads jobs:
 *
 * 1. Submit. A job is one JSON message on the jobs topic (KAFKA_JOBS_TOPIC, by default
 *    `<KAFKA_TOPIC>.jobs`), keyed by its serial key (queue/jobs.ts):
 *      {"id": "<UUID>", "type": "training", "serial_key": "<model id>", "input": {...}, "submitted_at": <µs>}
 *    The job is accepted once the message is durable. The submitter then records it as
 *    `queued`, and so does the workers' consumer for every message it reads (recording is
 *    idempotent); the consumer never runs a job. A message not of this shape is set aside
 *    on `<jobs topic>.dead-letter`.
 * 2. Claim. A runner with a handler for the job's type claims it (store/jobs/claims.ts).
 *    Jobs of one serial key run one at a time, in submission order; a runner runs at most
 *    JOBS_CONCURRENCY jobs at once. A job is claimable when queued (and its retry time has
 *    come), or when its runner has not heartbeated for a lease (JOBS_LEASE_MS).
 * 3. Run. Status `running`, with the runner and the attempt number (from 1). The handler
 *    reports events `{type, data}` (data a JSON object), stored in order, each with a `seq`
 *    and a UUID `id`; readers page through them with `after` (an event id).
 * 4. End. `completed` with the output (any JSON), last event `job_completed` {output};
 *    or `failed` with a message, last event `job_failed` {error_message}. A RetryableError
 *    from the handler runs the job again after 1 s, 2 s, 4 s, ... (at most a minute) until
 *    JOBS_MAX_ATTEMPTS attempts were made, then fails it; any other error fails it at once.
 *    A runner that shuts down releases its unfinished jobs (queued again, same attempt) for
 *    the next runner to resume; a runner that dies leaves them to be claimed after the lease
 *    as their next attempt. A completed or failed job never runs again, whatever the queue
 *    redelivers.
 *
 * An executor in another process or language takes a handler's place through a handler that
 * relays: claims, heartbeats and the store stay with the runner, the executor only does the
 * work. Training jobs (contract/trainingJobs.ts) have one: with TRAINER=external,
 * trainerRelay.ts offers each attempt to external trainers over HTTP (contract
 * trainerRelay.ts, routes training/trainerRoutes.ts, docs/training.md, "External trainer protocol"):
 * a trainer claims the attempt, sends `training_started`, `gradient_step`s and heartbeats,
 * uploads the new weights as a file and ends with `training_ended` {weights_digest} or
 * `training_failed`; the relay adds the checkpoint before it returns, and the runner writes
 * the end (`job_completed` shown as `training_ended`, `job_failed` as `training_failed`), so
 * the end is always last and written once. The built-in trainer is trainerJob.ts.
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { uuid4 } from "../../ids.js";
import { claimJob } from "../../store/jobs/claims.js";
import type { Job } from "../../store/jobs/jobRows.js";
import type { JobsRepository, NextJob } from "../../store/jobs/jobsRepository.js";
import { claimedJob } from "../../store/jobs/jobTransitions.js";
import { MonotonicClock, type Clock } from "../../times.js";
import type { JobHandler } from "./handler.js";
import { RunningJob, type RunSettings } from "./runningJob.js";
import { errorText } from "../../errors.js";

export const RUNNER_DEFAULTS = {
  settleMs: 1_000,
  pollMs: 1_000,
  retryBaseMs: 1_000,
  retryMaxMs: 60_000,
  shutdownGraceMs: 10_000,
} as const;

/** Jobs looked at per scan of the store: the next job of this many serial keys. */
const SCAN_LIMIT = 1_000;

export interface JobRunnerOptions {
  readonly concurrency: number;
  readonly maxAttempts: number;
  readonly leaseMs: number;
  /** Default: a sixth of the lease. */
  readonly heartbeatMs?: number;
  /** Δ of the claim protocol (store/jobs/claims.ts). */
  readonly settleMs?: number;
  /** How often the store is scanned for jobs when nothing wakes the runner. */
  readonly pollMs?: number;
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  /** How long a shutdown waits for interrupted jobs to return before releasing them. */
  readonly shutdownGraceMs?: number;
  readonly runnerId?: string;
  readonly clock?: Clock;
  readonly log: Logger;
}

/** A wait that `wake` ends early. */
class Alarm {
  private ring: (() => void) | null = null;

  wait(ms: number): Promise<void> {
    return new Promise((done) => {
      const timer = setTimeout(() => this.wake(), ms);
      this.ring = () => {
        clearTimeout(timer);
        done();
      };
    });
  }

  wake(): void {
    const ring = this.ring;
    this.ring = null;
    ring?.();
  }
}

/**
 * Claims and runs jobs of the registered types. `start` begins scanning the store (at once,
 * so jobs left by a previous process are picked up), `wake` scans now (a job was
 * recorded), `stop` shuts down: no more claims, running jobs are interrupted and given
 * the grace period to return, then released.
 */
export class JobRunner {
  readonly runnerId: string;
  private readonly handlers = new Map<string, JobHandler>();
  private readonly running = new Map<string, { readonly job: RunningJob; readonly done: Promise<void> }>();
  private readonly alarm = new Alarm();
  private readonly settings: RunSettings & { readonly settleMs: number; readonly pollMs: number; readonly shutdownGraceMs: number };
  private readonly clock: Clock;
  private loop: Promise<void> | null = null;
  private stopping = false;

  constructor(
    private readonly jobs: JobsRepository,
    private readonly options: JobRunnerOptions,
  ) {
    this.runnerId = options.runnerId ?? uuid4();
    this.clock = options.clock ?? new MonotonicClock();
    this.settings = {
      maxAttempts: options.maxAttempts,
      leaseMs: options.leaseMs,
      heartbeatMs: options.heartbeatMs ?? Math.max(1, Math.floor(options.leaseMs / 6)),
      settleMs: options.settleMs ?? RUNNER_DEFAULTS.settleMs,
      pollMs: options.pollMs ?? RUNNER_DEFAULTS.pollMs,
      retryBaseMs: options.retryBaseMs ?? RUNNER_DEFAULTS.retryBaseMs,
      retryMaxMs: options.retryMaxMs ?? RUNNER_DEFAULTS.retryMaxMs,
      shutdownGraceMs: options.shutdownGraceMs ?? RUNNER_DEFAULTS.shutdownGraceMs,
    };
    const { leaseMs, heartbeatMs, settleMs } = this.settings;
    // A holder stops after half a lease without a stored heartbeat (claims.ts): its first
    // one comes a settle after the claim, and then one every heartbeatMs.
    if (settleMs + heartbeatMs >= leaseMs / 2) throw new Error(`job lease ${leaseMs} ms is too short for a settle of ${settleMs} ms and heartbeats every ${heartbeatMs} ms`);
  }

  register(type: string, handler: JobHandler): void {
    if (this.loop) throw new Error("register job handlers before starting the runner");
    this.handlers.set(type, handler);
  }

  start(): void {
    this.loop ??= this.scanLoop();
  }

  wake(): void {
    this.alarm.wake();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.alarm.wake();
    await this.loop;
    const runs = [...this.running.values()];
    for (const run of runs) run.job.interrupt("runner shutting down");
    const settled = Promise.all(runs.map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise<void>((r) => (timer = setTimeout(r, this.settings.shutdownGraceMs)))]);
    clearTimeout(timer);
    // Runs whose handler returned are recording their end: let them finish; release the rest.
    await Promise.all([...this.running.values()].map((r) => (r.job.finishing ? r.done : r.job.abandon())));
  }

  private async scanLoop(): Promise<void> {
    while (!this.stopping) {
      try {
        await this.claimWhatFits();
      } catch (err) {
        this.options.log.warn({ err: errorText(err) }, "job scan failed");
      }
      if (!this.stopping) await this.alarm.wait(this.settings.pollMs);
    }
  }

  private async claimWhatFits(): Promise<void> {
    const free = this.options.concurrency - this.running.size;
    if (free <= 0) return;
    const scanned = await this.jobs.nextPerSerialKey([...this.handlers.keys()], SCAN_LIMIT);
    const now = this.clock.nowMicros();
    const candidates = scanned.filter((next) => !this.running.has(next.job.id) && this.nextAttempt(next.job, next.lastBeatAt, now) !== null);
    await Promise.all(candidates.slice(0, free).map((next) => this.claimAndRun(next)));
  }

  private async claimAndRun(next: NextJob): Promise<void> {
    // The claim's time, on both clocks: `claimed_at` is the job's first sign of life, and
    // its holder's half-lease countdown starts no later than it.
    let claimedAtMonotonic = 0;
    const claimFrom = (current: Job) => {
      claimedAtMonotonic = performance.now();
      const now = this.clock.nowMicros();
      const attempt = this.nextAttempt(current, next.lastBeatAt, now);
      return attempt && claimedJob({ ...current, error: attempt.error }, this.runnerId, now, attempt.number);
    };
    const claimed = await claimJob(this.jobs, next.job.id, claimFrom, this.settings.settleMs);
    if (!claimed) return;
    const job = new RunningJob(claimed, claimedAtMonotonic, { jobs: this.jobs, clock: this.clock, log: this.options.log, settings: this.settings });
    const done = job.run(this.handlers.get(claimed.type)!).finally(() => {
      this.running.delete(claimed.id);
      this.alarm.wake();
    });
    this.running.set(claimed.id, { job, done });
  }

  /**
   * The attempt this runner would claim `job` for, or null when the job is not claimable:
   * a queued job whose retry time has come (its attempt), or a running one whose runner
   * gave no sign of life for a lease. Taking over from a runner that had started (it
   * heartbeated) counts as that attempt's failure; a claim that never ran (one withdrawn,
   * claims.ts) does not.
   */
  private nextAttempt(job: Job, lastBeatAt: number | null, now: number): { number: number; error: string | null } | null {
    if (!this.handlers.has(job.type)) return null;
    if (job.status === "queued") return job.notBefore <= now ? { number: job.attempt, error: job.error } : null;
    if (job.status !== "running" || !job.claim) return null;
    const lastSign = Math.max(job.claim.claimedAt, lastBeatAt ?? 0);
    if (now - lastSign <= this.settings.leaseMs * 1000) return null;
    if (lastBeatAt === null || lastBeatAt < job.claim.claimedAt) return { number: job.attempt, error: job.error };
    return { number: job.attempt + 1, error: `runner ${job.claim.runnerId} stopped during attempt ${job.attempt}` };
  }
}
