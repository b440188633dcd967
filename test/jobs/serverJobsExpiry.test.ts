import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { JobsRepository } from "../../services/store/jobs/jobsRepository.js";
import { claimedJob, completedJob } from "../../services/store/jobs/jobTransitions.js";
import { RetentionExpiry } from "../../services/store/projects/expiry.js";
import { retentionCutoff, ProjectRetention } from "../../services/store/projects/retention.js";
import { ProjectSettingsRepository } from "../../services/store/projects/settingsRepository.js";
import { ALERT_WEBHOOK_JOB } from "../../services/worker/jobs/alertWebhook.js";
import { MONITOR_SWEEP_JOB } from "../../services/worker/monitors/monitorSweeper.js";
import { RetentionJob, SERVER_JOBS_KEEP_DAYS } from "../../services/worker/retentionJob.js";
import { freshStore } from "../support/database.js";
import { until } from "../support/polling.js";
import { log } from "./support.js";

/**
 * The retention job deletes the jobs the server records for itself (monitor sweeps, alert
 * webhook deliveries) once past SERVER_JOBS_KEEP_DAYS, and leaves users' jobs alone: the job
 * runner's polls read the whole jobs table.
 */
let store: ClickHouseStore;
let jobs: JobsRepository;

beforeAll(async () => {
  store = await freshStore();
  jobs = new JobsRepository(store);
});
afterAll(async () => {
  await store?.close();
});

const DAY = retentionCutoff(0) - retentionCutoff(1);
const daysAgo = (days: number) => retentionCutoff(days);
const job = (id: string, type: string, submitted_at: number) => ({ id, type, serial_key: id, input: {}, submitted_at });

async function runRetention(): Promise<void> {
  const run = new RetentionJob(new RetentionExpiry(store), new ProjectRetention(new ProjectSettingsRepository(store), null), jobs, { intervalMs: 3_600_000, log });
  run.start();
  await run.stop();
}

async function present(ids: readonly string[]): Promise<string[]> {
  const found = await Promise.all(ids.map(async (id) => ((await jobs.get(id)) ? id : null)));
  return found.filter((id): id is string => id !== null);
}

describe("the server's own jobs", () => {
  it("stay while none is a day past the days kept (the table is not rewritten at every run)", async () => {
    await jobs.record([job("sweep-young-old", MONITOR_SWEEP_JOB, daysAgo(SERVER_JOBS_KEEP_DAYS) - DAY / 2)]);
    await runRetention();
    expect(await present(["sweep-young-old"])).toEqual(["sweep-young-old"]);
  });

  it("are deleted past the days kept, every state of each, once one is older by a day; users' jobs and younger ones stay", async () => {
    const old = daysAgo(SERVER_JOBS_KEEP_DAYS + 2);
    await jobs.record([
      job("sweep-old", MONITOR_SWEEP_JOB, old),
      job("webhook-old", ALERT_WEBHOOK_JOB, old),
      job("sweep-recent", MONITOR_SWEEP_JOB, daysAgo(1)),
      job("evaluation-old", "evaluate_model", old),
    ]);
    // Later states of an old job (rows of other versions) go with it.
    const claimed = claimedJob((await jobs.get("webhook-old"))!, "runner", old + 1, 1);
    await jobs.write(claimed);
    await jobs.write(completedJob(claimed, null, old + 2));
    expect((await jobs.get("webhook-old"))?.status).toBe("completed");
    await runRetention();
    const all = ["sweep-young-old", "sweep-old", "webhook-old", "sweep-recent", "evaluation-old"];
    await until(async () => (await present(all)).length === 2, { what: "the old server jobs deleted", timeoutMs: 30_000 });
    expect(await present(all)).toEqual(["sweep-recent", "evaluation-old"]);
  });
});
