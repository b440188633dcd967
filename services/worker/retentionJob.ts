import type { Logger } from "pino";
import type { ExpiredProject, RetentionExpiry } from "../store/projects/expiry.js";
import { retentionCutoff, type ProjectRetention } from "../store/projects/retention.js";
import { errorText } from "../errors.js";
import type { JobsRepository } from "../store/jobs/jobsRepository.js";
import { ALERT_WEBHOOK_JOB } from "./jobs/alertWebhook.js";
import { MONITOR_SWEEP_JOB } from "./monitors/monitorSweeper.js";

/**
 * The worker's retention job: every `intervalMs`, at start, and soon after a project's
 * settings change in this process (`runSoon`), it
 * 1. drops the monthly partitions of `calls` that end before every project's cutoff (only
 *    when the server has a default retention: without one a project may keep everything);
 * 2. for each project whose oldest call is past its cutoff, starts `ALTER TABLE … DELETE`
 *    mutations of the expired rows (store/projects/expiry.ts): one per table for all those
 *    projects, and none on a table whose last one is not done yet;
 * 3. deletes the jobs the server records for itself past SERVER_JOBS_KEEP_DAYS (below).
 * Runs never overlap; a request during a run makes one more run right after it. A run that
 * left a delete waiting for another (what calls reference goes in steps, `after` in expiry.ts)
 * is followed by another FOLLOW_UP_MS later, so each step need not wait for the interval.
 */
/** How soon after a run that left a delete waiting the next one runs. */
export const FOLLOW_UP_MS = 10_000;

/**
 * The jobs the server records for itself: a monitor sweep per slot while a monitor is active
 * (8,640 a day at the default interval), an alert's webhook delivery per state change. Kept
 * this many days, for operators, then deleted, about once a day: the job runner's every poll
 * reads the whole jobs table (store/jobs/jobsQuery.ts), which would otherwise grow without
 * end. Users' jobs (evaluations, scoring, training) stay.
 */
export const SERVER_JOB_TYPES = [MONITOR_SWEEP_JOB, ALERT_WEBHOOK_JOB];
export const SERVER_JOBS_KEEP_DAYS = 7;

export class RetentionJob {
  private timer: NodeJS.Timeout | null = null;
  private followUp: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly expiry: RetentionExpiry,
    private readonly retention: ProjectRetention,
    private readonly jobs: JobsRepository,
    private readonly options: { readonly intervalMs: number; readonly log: Logger },
  ) {}

  start(): void {
    this.runSoon();
    this.timer = setInterval(() => this.runSoon(), this.options.intervalMs);
    this.timer.unref();
  }

  /** A run now, or right after the one under way. */
  runSoon(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.runWhileAsked().finally(() => {
      this.running = null;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.followUp) clearTimeout(this.followUp);
    await this.running;
  }

  private async runWhileAsked(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.runOnce();
      } catch (err) {
        this.options.log.warn({ err: errorText(err) }, "retention run failed; the next one retries");
      }
    } while (this.again && !this.stopped);
  }

  private async runOnce(): Promise<void> {
    await this.expireCalls();
    await this.expireServerJobs();
  }

  private async expireServerJobs(): Promise<void> {
    const started = await this.jobs.deleteSubmittedBefore(SERVER_JOB_TYPES, retentionCutoff(SERVER_JOBS_KEEP_DAYS), retentionCutoff(SERVER_JOBS_KEEP_DAYS + 1));
    if (started) this.options.log.info({ types: SERVER_JOB_TYPES, days: SERVER_JOBS_KEEP_DAYS }, "retention: deleting the server's own jobs past their days");
  }

  private async expireCalls(): Promise<void> {
    this.retention.refresh();
    const { own, defaultDays } = await this.retention.all();
    if (defaultDays !== null) {
      const dropped = await this.expiry.dropMonthsBefore(retentionCutoff(Math.max(defaultDays, ...own.values())));
      if (dropped.length > 0) this.options.log.info({ months: dropped }, "retention: dropped months of calls past every project's retention");
    }
    const expired: ExpiredProject[] = [];
    for (const { projectId, oldest } of await this.expiry.projects()) {
      const days = own.get(projectId) ?? defaultDays;
      if (days !== null && oldest < retentionCutoff(days)) expired.push({ projectId, cutoff: retentionCutoff(days) });
    }
    if (expired.length === 0 || this.stopped) return;
    const { started, waiting } = await this.expiry.deleteExpired(expired, await this.expiry.busyTables());
    if (started.length > 0) this.options.log.info({ projects: expired.length, tables: started }, "retention: deleting expired rows");
    if (waiting) this.scheduleFollowUp();
  }

  private scheduleFollowUp(): void {
    if (this.followUp) clearTimeout(this.followUp);
    this.followUp = setTimeout(() => {
      this.followUp = null;
      this.runSoon();
    }, Math.min(FOLLOW_UP_MS, this.options.intervalMs));
    this.followUp.unref();
  }
}
