import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { JobInterruptedError, RetryableError, errorText } from "../../errors.js";
import { uuidv7 } from "../../ids.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../../json.js";
import { stillHeld } from "../../store/jobs/claims.js";
import type { Job, JobEvent } from "../../store/jobs/jobRows.js";
import type { JobsRepository } from "../../store/jobs/jobsRepository.js";
import { completedJob, failedJob, releasedJob, retryLaterJob } from "../../store/jobs/jobTransitions.js";
import type { Clock } from "../../times.js";
import { JOB_COMPLETED, JOB_FAILED, type JobContext, type JobHandler, type JobProgress } from "./handler.js";

export interface RunSettings {
  readonly maxAttempts: number;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
}

export interface RunDeps {
  readonly jobs: JobsRepository;
  readonly clock: Clock;
  readonly log: Logger;
  readonly settings: RunSettings;
}

type Outcome =
  | { readonly kind: "completed"; readonly output: JsonValue }
  | { readonly kind: "failed"; readonly message: string }
  | { readonly kind: "retry"; readonly message: string }
  | { readonly kind: "interrupted" }
  /** The end was recorded among the events by an earlier run: only the state is left to write. */
  | { readonly kind: "found"; readonly state: Job };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Store writes that end a run are tried this many times (a blip of the store) before the lease takes over. */
const END_WRITE_TRIES = 5;

/**
 * One claimed job, from the claim to its end: heartbeats, the handler with its context,
 * and the state it leaves (completed, failed, queued for a retry, or released).
 */
export class RunningJob {
  private held = true;
  private beating = true;
  private handlerReturned = false;
  private readonly controller = new AbortController();
  private wakeBeat: (() => void) | null = null;
  private writes: Promise<void> = Promise.resolve();
  private nextSeq = 1;

  /** `lastBeatSent`: a monotonic time taken before the claim's `claimed_at`, its first sign of life. */
  constructor(
    private readonly job: Job,
    private lastBeatSent: number,
    private readonly deps: RunDeps,
  ) {}

  /** The handler is done: the run is only recording its outcome now. */
  get finishing(): boolean {
    return this.handlerReturned;
  }

  /** Runs the job to its end; never throws (a failure to record is left to the lease). */
  async run(handler: JobHandler): Promise<void> {
    const beats = this.heartbeats();
    try {
      const outcome = (await this.endedBefore()) ?? (this.held ? await this.execute(handler) : { kind: "interrupted" as const });
      this.handlerReturned = true;
      await this.writes;
      await this.stopBeating(beats);
      if (this.held) await this.leave(outcome);
    } catch (err) {
      this.deps.log.error({ job: this.job.id, err: errorText(err) }, "job run broke off; releasing it");
      await this.abandon();
    } finally {
      await this.stopBeating(beats);
    }
  }

  /** Asks the handler to stop (the runner is shutting down); the job is released, not failed. */
  interrupt(reason: string): void {
    this.controller.abort(new JobInterruptedError(reason));
  }

  /** Gives the job up now, whatever the handler does later: released for the next runner. */
  async abandon(): Promise<void> {
    if (!this.held || this.handlerReturned) return;
    this.interrupt("runner stopped");
    this.held = false;
    this.beating = false;
    this.wakeBeat?.();
    await this.persist(() => this.deps.jobs.write(releasedJob(this.job)));
  }

  /**
   * A job taken over can have ended already: its end is among its events (written before
   * the state), or runners that stopped used its attempts up. Then that is its outcome.
   */
  private async endedBefore(): Promise<Outcome | null> {
    const last = await this.deps.jobs.lastEvent(this.job.id);
    this.nextSeq = (last?.seq ?? 0) + 1;
    if (last?.type === JOB_COMPLETED) return { kind: "found", state: completedJob(this.job, last.data.output ?? null, last.at) };
    if (last?.type === JOB_FAILED) return { kind: "found", state: failedJob(this.job, String(last.data.error_message), last.at) };
    if (this.job.attempt > this.deps.settings.maxAttempts) {
      return { kind: "failed", message: `${this.job.error ?? "its runner stopped"} (gave up after ${this.deps.settings.maxAttempts} attempts)` };
    }
    return null;
  }

  private async stopBeating(beats: Promise<void>): Promise<void> {
    this.beating = false;
    this.wakeBeat?.();
    await beats;
  }

  private async execute(handler: JobHandler): Promise<Outcome> {
    try {
      return { kind: "completed", output: (await handler(this.job.input, this.context())) ?? null };
    } catch (err) {
      if (this.controller.signal.aborted) return { kind: "interrupted" };
      if (err instanceof RetryableError) return { kind: "retry", message: err.message };
      return { kind: "failed", message: errorText(err) };
    }
  }

  private context(): JobContext {
    return { jobId: this.job.id, attempt: this.job.attempt, signal: this.controller.signal, progress: (event) => this.progress(event) };
  }

  /** Events are written one after another, so that they are stored in `seq` order. */
  private progress(event: JobProgress): Promise<void> {
    if (event.type === JOB_COMPLETED || event.type === JOB_FAILED || event.type === "") {
      return Promise.reject(new Error(`a job cannot report an event of type "${event.type}"`));
    }
    if (!isJsonObject(event.data)) return Promise.reject(new Error("a job event's data must be a JSON object"));
    const stored: JobEvent = { id: uuidv7(), seq: this.nextSeq++, type: event.type, data: event.data, at: this.deps.clock.nowMicros() };
    const write = this.writes.then(() => {
      if (!this.held) throw this.controller.signal.reason ?? new JobInterruptedError("run ended");
      return this.deps.jobs.appendEvents(this.job.id, [stored]);
    });
    this.writes = write.catch(() => undefined);
    return write;
  }

  private async leave(outcome: Outcome): Promise<void> {
    const { jobs, clock, settings } = this.deps;
    if (outcome.kind === "interrupted") {
      await this.persist(() => jobs.write(releasedJob(this.job)));
    } else if (outcome.kind === "found") {
      await this.persist(() => jobs.write(outcome.state));
    } else if (outcome.kind === "retry" && this.job.attempt < settings.maxAttempts) {
      const delayMs = Math.min(settings.retryBaseMs * 2 ** (this.job.attempt - 1), settings.retryMaxMs);
      await this.persist(() => jobs.write(retryLaterJob(this.job, outcome.message, clock.nowMicros() + delayMs * 1000)));
    } else if (outcome.kind === "retry") {
      await this.end({ kind: "failed", message: `${outcome.message} (gave up after ${settings.maxAttempts} attempts)` });
    } else {
      await this.end(outcome);
    }
  }

  /** The end goes to the events first, then to the state (see store/jobs/claims.ts). */
  private async end(outcome: Extract<Outcome, { kind: "completed" | "failed" }>): Promise<void> {
    const now = this.deps.clock.nowMicros();
    const data: JsonObject = outcome.kind === "completed" ? { output: outcome.output } : { error_message: outcome.message };
    const event: JobEvent = { id: uuidv7(), seq: this.nextSeq++, type: outcome.kind === "completed" ? JOB_COMPLETED : JOB_FAILED, data, at: now };
    const state = outcome.kind === "completed" ? completedJob(this.job, outcome.output, now) : failedJob(this.job, outcome.message, now);
    if (await this.persist(() => this.deps.jobs.appendEvents(this.job.id, [event]))) await this.persist(() => this.deps.jobs.write(state));
  }

  /** Retries a write through a blip of the store; gives up (the lease takes over) if it lasts. */
  private async persist(write: () => Promise<void>): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        await write();
        return true;
      } catch (err) {
        if (!(err instanceof RetryableError) || attempt + 1 >= END_WRITE_TRIES) {
          this.deps.log.error({ job: this.job.id, err: errorText(err) }, "could not record a job's state; its lease will hand it on");
          return false;
        }
        await sleep(200 * 2 ** attempt);
      }
    }
  }

  /**
   * Every heartbeatMs: give up if no heartbeat was stored for half a lease (another runner
   * may take the job after a whole lease), or if another runner changed the job; else beat.
   */
  private async heartbeats(): Promise<void> {
    const { jobs, clock, settings } = this.deps;
    while (this.beating) {
      if (performance.now() - this.lastBeatSent > settings.leaseMs / 2) return this.lose("no heartbeat stored for half a lease");
      try {
        const current = await jobs.get(this.job.id);
        if (!this.beating) return;
        if (!stillHeld(this.job, current)) return this.lose("another runner took the job over");
        const sent = performance.now();
        await jobs.beat(this.job.id, this.job.claim!.id, clock.nowMicros());
        this.lastBeatSent = sent;
      } catch (err) {
        this.deps.log.warn({ job: this.job.id, err: errorText(err) }, "job heartbeat failed");
      }
      await new Promise<void>((wake) => {
        this.wakeBeat = wake;
        setTimeout(wake, settings.heartbeatMs);
      });
    }
  }

  private lose(reason: string): void {
    this.deps.log.warn({ job: this.job.id, reason }, "job claim lost; stopping its run");
    this.held = false;
    this.interrupt(reason);
  }
}
