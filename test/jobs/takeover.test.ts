import { afterEach, describe, expect, it } from "vitest";
import { JobInterruptedError } from "../../services/errors.js";
import { delivering, temporaryLog } from "../support/delivery.js";
import { jobsTopic, type JobMessage } from "../../services/queue/jobs.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { claimJob } from "../../services/store/jobs/claims.js";
import type { Job } from "../../services/store/jobs/jobRows.js";
import { JobsRepository } from "../../services/store/jobs/jobsRepository.js";
import { claimedJob, releasedJob } from "../../services/store/jobs/jobTransitions.js";
import { nowMicros } from "../../services/times.js";
import type { JobRunner } from "../../services/worker/jobs/runner.js";
import { JobSubmitter, jobIntake } from "../../services/worker/jobs/submitter.js";
import { uuidv7 } from "../../services/ids.js";
import { freshStore } from "../support/database.js";
import { countingRunner, ended, FAST, log, until, type Invocation } from "./support.js";

const stores: ClickHouseStore[] = [];
const runners: JobRunner[] = [];

afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function repository(): Promise<JobsRepository> {
  const store = await freshStore();
  stores.push(store);
  return new JobsRepository(store);
}

function runner(jobs: JobsRepository, name: string, invocations: Invocation[], options = {}): JobRunner {
  const r = countingRunner(jobs, name, invocations, options);
  runners.push(r);
  return r;
}

function message(input: JobMessage["input"], serialKey?: string): JobMessage {
  const id = uuidv7();
  return { id, type: "count", serial_key: serialKey ?? id, input, submitted_at: nowMicros() };
}

/** Another runner's claim on `id`, as a runner that died would leave it (`beat`: it had started). */
async function ghostClaim(jobs: JobsRepository, id: string, options: { beat: boolean; attempt?: number }): Promise<Job> {
  const current = (await jobs.get(id))!;
  const claim = claimedJob(current, "ghost", nowMicros(), options.attempt ?? current.attempt);
  await jobs.write(claim);
  if (options.beat) await jobs.beat(id, claim.claim!.id, nowMicros());
  return claim;
}

describe("claims", () => {
  it("give a job to exactly one of two runners that claim it at the same moment", async () => {
    const jobs = await repository();
    const messages = Array.from({ length: 5 }, () => message({ to: 1 }));
    await jobs.record(messages);
    // Here a claim may take over any unfinished state: a round in which both claimants
    // withdrew (their claims were slower than the settle, on a loaded machine) is raced again.
    const claimAs = (runnerId: string) => (current: Job) => (current.finishedAt === null ? claimedJob(current, runnerId, nowMicros(), 1) : null);
    for (const { id } of messages) {
      let winners: Job[] = [];
      for (let round = 0; round < 5 && winners.length === 0; round++) {
        const [a, b] = await Promise.all([claimJob(jobs, id, claimAs("a"), FAST.settleMs!), claimJob(jobs, id, claimAs("b"), FAST.settleMs!)]);
        winners = [a, b].filter((c) => c !== null);
        expect(winners.length).toBeLessThanOrEqual(1);
      }
      expect(winners).toHaveLength(1);
      expect((await jobs.get(id))!.claim!.id).toBe(winners[0]!.claim!.id);
    }
  });

  it("let two runners race over the same jobs: each job runs once and all complete", async () => {
    const jobs = await repository();
    const invocations: Invocation[] = [];
    const messages = Array.from({ length: 6 }, () => message({ to: 2, stepMs: 20 }));
    await jobs.record(messages);
    const a = runner(jobs, "A", invocations);
    const b = runner(jobs, "B", invocations);
    a.start();
    b.start();
    const done = await Promise.all(messages.map((m) => ended(jobs, m.id)));
    expect(done.map((j) => j.status)).toEqual(messages.map(() => "completed"));
    expect(invocations.map((i) => i.jobId).sort()).toEqual(messages.map((m) => m.id).sort());
    expect(invocations.every((i) => i.attempt === 1)).toBe(true);
  });
});

describe("a runner that stops", () => {
  it("releases the job it was running, and the next runner resumes it on the same attempt", async () => {
    const jobs = await repository();
    const invocations: Invocation[] = [];
    const job = message({ to: 4, stepMs: 150 });
    await jobs.record([job]);
    const a = runner(jobs, "A", invocations);
    a.start();
    await until(async () => (await jobs.events(job.id, { after: null, limit: 10 })).events.length > 0);
    await a.stop();
    const released = (await jobs.get(job.id))!;
    expect(released).toMatchObject({ status: "queued", attempt: 1, claim: null, error: null });

    runner(jobs, "B", invocations).start();
    const done = await ended(jobs, job.id);
    expect(done).toMatchObject({ status: "completed", attempt: 1, output: { counted: 4 } });
    expect(invocations.map((i) => `${i.runner}#${i.attempt}`)).toEqual(["A#1", "B#1"]);
    const { events } = await jobs.events(job.id, { after: null, limit: 100 });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)!.type).toBe("job_completed");
    expect(events.filter((e) => e.type === "step").map((e) => e.data.n).slice(-4)).toEqual([1, 2, 3, 4]);
  });

  it("releases a job whose handler ignores the abort once the grace period is over", async () => {
    const jobs = await repository();
    let calls = 0;
    const a = runnerOf(jobs, { shutdownGraceMs: 200 }, async () => {
      calls++;
      if (calls === 1) await new Promise(() => {});
      return "second time";
    });
    const job = message({});
    await jobs.record([{ ...job, type: "stubborn" }]);
    a.start();
    await until(() => calls === 1);
    await a.stop();
    expect((await jobs.get(job.id))!).toMatchObject({ status: "queued", claim: null });
    runnerOf(jobs, {}, async () => {
      calls++;
      return "second time";
    }).start();
    expect(await ended(jobs, job.id)).toMatchObject({ status: "completed", output: "second time" });
  });
});

function runnerOf(jobs: JobsRepository, options: Partial<typeof FAST>, handler: () => Promise<string>): JobRunner {
  const r = countingRunner(jobs, "stubborn", [], options);
  r.register("stubborn", handler);
  runners.push(r);
  return r;
}

describe("a runner that died", () => {
  it("leaves its job to be taken over once the lease has passed, as the next attempt", async () => {
    const jobs = await repository();
    const invocations: Invocation[] = [];
    const job = message({ to: 2 });
    await jobs.record([job]);
    const ghost = await ghostClaim(jobs, job.id, { beat: true });
    await jobs.appendEvents(job.id, [{ id: uuidv7(), seq: 1, type: "step", data: { n: 1 }, at: nowMicros() }]);
    runner(jobs, "B", invocations).start();
    const done = await ended(jobs, job.id);
    expect(done).toMatchObject({ status: "completed", attempt: 2, output: { counted: 2 } });
    expect(done.claim!.claimedAt - ghost.claim!.claimedAt).toBeGreaterThan(FAST.leaseMs * 1000);
    expect(invocations.map((i) => `${i.runner}#${i.attempt}`)).toEqual(["B#2"]);
    const { events } = await jobs.events(job.id, { after: null, limit: 10 });
    expect(events.map((e) => [e.seq, e.type])).toEqual([[1, "step"], [2, "step"], [3, "step"], [4, "job_completed"]]);
  });

  it("does not count a claim that never started as an attempt", async () => {
    const jobs = await repository();
    const invocations: Invocation[] = [];
    const job = message({ to: 1 });
    await jobs.record([job]);
    await ghostClaim(jobs, job.id, { beat: false });
    runner(jobs, "B", invocations).start();
    expect(await ended(jobs, job.id)).toMatchObject({ status: "completed", attempt: 1 });
  });

  it("records the end its runner had written among the events instead of running the job again", async () => {
    const jobs = await repository();
    const invocations: Invocation[] = [];
    const job = message({ to: 1 });
    await jobs.record([job]);
    await ghostClaim(jobs, job.id, { beat: true });
    await jobs.appendEvents(job.id, [{ id: uuidv7(), seq: 1, type: "job_completed", data: { output: { counted: 9 } }, at: nowMicros() }]);
    runner(jobs, "B", invocations).start();
    expect(await ended(jobs, job.id)).toMatchObject({ status: "completed", output: { counted: 9 } });
    expect(invocations).toEqual([]);
  });

  it("fails a job whose runners died on every attempt, with a message", async () => {
    const jobs = await repository();
    const invocations: Invocation[] = [];
    const job = message({ to: 1 });
    await jobs.record([job]);
    await ghostClaim(jobs, job.id, { beat: true, attempt: FAST.maxAttempts });
    runner(jobs, "B", invocations).start();
    const done = await ended(jobs, job.id);
    expect(done).toMatchObject({ status: "failed", error: `runner ghost stopped during attempt 3 (gave up after 3 attempts)` });
    expect(invocations).toEqual([]);
  });
});

describe("a runner whose job was taken from it", () => {
  it("aborts the run and writes nothing more for it", async () => {
    const jobs = await repository();
    const signals: AbortSignal[] = [];
    let calls = 0;
    const r = runnerOf(jobs, {}, async () => "unused");
    r.register("watched", async (_input, ctx) => {
      calls++;
      signals.push(ctx.signal);
      if (calls === 1) {
        await ctx.progress({ type: "first", data: {} });
        await new Promise((_, fail) => ctx.signal.addEventListener("abort", () => fail(ctx.signal.reason)));
      }
      return { run: calls };
    });
    const job = message({});
    await jobs.record([{ ...job, type: "watched" }]);
    r.start();
    await until(async () => (await jobs.events(job.id, { after: null, limit: 10 })).events.length > 0);
    // Another runner changes the job: here it gives it back to the queue.
    await jobs.write(releasedJob((await jobs.get(job.id))!));
    const done = await ended(jobs, job.id);
    expect(done).toMatchObject({ status: "completed", output: { run: 2 } });
    expect(signals[0]!.aborted).toBe(true);
    expect(signals[0]!.reason).toBeInstanceOf(JobInterruptedError);
    const { events } = await jobs.events(job.id, { after: null, limit: 10 });
    expect(events.map((e) => e.type)).toEqual(["first", "job_completed"]);
  });
});

describe("a restart in the embedded mode", () => {
  it("runs the jobs the previous process had accepted and not run", async () => {
    const jobs = await repository();
    const before = await temporaryLog(jobsTopic("jobs"));
    await before.start(delivering(jobIntake(jobs)));
    const submitter = new JobSubmitter(before, jobs, log);
    const accepted = [await submitter.submit({ type: "count", input: { to: 1 } }), await submitter.submit({ type: "count", input: { to: 2 } })];
    await before.shutdown();

    const invocations: Invocation[] = [];
    runner(jobs, "after", invocations).start();
    const done = await Promise.all(accepted.map((m) => ended(jobs, m.id)));
    expect(done.map((j) => j.output)).toEqual([{ counted: 1 }, { counted: 2 }]);
  });
});
