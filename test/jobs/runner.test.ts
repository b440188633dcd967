import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobsTopic, type JobMessage } from "../../services/queue/jobs.js";
import type { DurableLogQueue } from "../../services/queue/durableLog/durableLogQueue.js";
import { delivering, temporaryLog } from "../support/delivery.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { JobsRepository } from "../../services/store/jobs/jobsRepository.js";
import { JobSubmitter, jobIntake } from "../../services/worker/jobs/submitter.js";
import { freshStore } from "../support/database.js";
import { countingRunner, ended, log, until, type Invocation } from "./support.js";

let store: ClickHouseStore;
let jobs: JobsRepository;
let queue: DurableLogQueue<JobMessage>;
let submitter: JobSubmitter;
const invocations: Invocation[] = [];
const gates = new Map<string, Promise<void>>();
let runner: ReturnType<typeof countingRunner>;

beforeAll(async () => {
  store = await freshStore();
  jobs = new JobsRepository(store);
  runner = countingRunner(jobs, "r1", invocations, {}, gates);
  queue = await temporaryLog(jobsTopic("jobs"));
  await queue.start(delivering(jobIntake(jobs, () => runner.wake())));
  submitter = new JobSubmitter(queue, jobs, log);
  runner.start();
});

afterAll(async () => {
  await runner.stop();
  await queue.shutdown();
  await store.close();
});

const runsOf = (id: string) => invocations.filter((i) => i.jobId === id).map((i) => i.attempt);

describe("the job runner over the embedded queue", () => {
  it("records a submitted job before answering, runs it, and keeps its output and its events in order", async () => {
    const { id } = await submitter.submit({ type: "count", input: { to: 5 } });
    const first = await jobs.get(id);
    expect(first).not.toBeNull();
    expect(first!.type).toBe("count");

    const done = await ended(jobs, id);
    expect(done).toMatchObject({ status: "completed", output: { counted: 5 }, error: null, attempt: 1 });
    expect(done.claim?.runnerId).toBe(runner.runnerId);
    expect(runsOf(id)).toEqual([1]);

    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const page = await jobs.events(id, { after, limit: 2 });
      pages++;
      for (const e of page.events) seen.push(e.type === "step" ? `step ${String(e.data.n)}` : `${e.type} ${JSON.stringify(e.data)}`);
      if (!page.hasMore) break;
      after = page.events[page.events.length - 1]!.id;
    }
    expect(seen).toEqual(["step 1", "step 2", "step 3", "step 4", "step 5", 'job_completed {"output":{"counted":5}}']);
    expect(pages).toBe(3);
  });

  it("refuses a page after an event the job does not have", async () => {
    const { id } = await submitter.submit({ type: "count", input: { to: 1 } });
    await ended(jobs, id);
    await expect(jobs.events(id, { after: "00000000-0000-7000-8000-000000000000", limit: 10 })).rejects.toThrow(/no event/);
  });

  it("fails a job at once, with the error's message, when its handler throws a permanent error", async () => {
    const { id } = await submitter.submit({ type: "count", input: { to: 3, fail: "permanent" } });
    const done = await ended(jobs, id);
    expect(done).toMatchObject({ status: "failed", error: "cannot count to 3", attempt: 1, output: undefined });
    expect(runsOf(id)).toEqual([1]);
    const { events } = await jobs.events(id, { after: null, limit: 10 });
    expect(events.map((e) => [e.type, e.data])).toEqual([["job_failed", { error_message: "cannot count to 3" }]]);
  });

  it("retries a retryable failure with backoff and completes on a later attempt", async () => {
    const { id } = await submitter.submit({ type: "count", input: { to: 2, flaky: 2 } });
    const done = await ended(jobs, id);
    expect(done).toMatchObject({ status: "completed", output: { counted: 2 }, attempt: 3 });
    expect(runsOf(id)).toEqual([1, 2, 3]);
  });

  it("fails a job that keeps failing retryably once its attempts are used up", async () => {
    const { id } = await submitter.submit({ type: "count", input: { to: 2, flaky: 10 } });
    const done = await ended(jobs, id);
    expect(done.status).toBe("failed");
    expect(done.error).toBe("flaky on attempt 3 (gave up after 3 attempts)");
    expect(runsOf(id)).toEqual([1, 2, 3]);
  });

  it("runs the jobs of one serial key one at a time in submission order, and other keys beside them", async () => {
    let openGate!: () => void;
    gates.set("other-key-started", new Promise<void>((r) => (openGate = r)));
    const a1 = await submitter.submit({ type: "count", serialKey: "model-a", input: { to: 2, gate: "other-key-started" } });
    const a2 = await submitter.submit({ type: "count", serialKey: "model-a", input: { to: 2 } });
    const a3 = await submitter.submit({ type: "count", serialKey: "model-a", input: { to: 2 } });
    // a1 waits until this job has started: it can only if other keys run beside model-a.
    const b = await submitter.submit({ type: "count", serialKey: "model-b", input: { to: 1 } });
    await until(() => runsOf(b.id).length > 0);
    openGate();
    const ends = await Promise.all([a1, a2, a3].map((j) => ended(jobs, j.id)));
    expect(ends.map((j) => j.status)).toEqual(["completed", "completed", "completed"]);
    const order = invocations.filter((i) => [a1.id, a2.id, a3.id].includes(i.jobId)).map((i) => i.jobId);
    expect(order).toEqual([a1.id, a2.id, a3.id]);
    // Each started only after the one before had ended.
    expect(ends[1]!.claim!.claimedAt).toBeGreaterThan(ends[0]!.finishedAt!);
    expect(ends[2]!.claim!.claimedAt).toBeGreaterThan(ends[1]!.finishedAt!);
  });

  it("never runs a finished job again when its message is delivered again", async () => {
    const message = await submitter.submit({ type: "count", input: { to: 1 } });
    await ended(jobs, message.id);
    await queue.publish([message]);
    await queue.publish([message]);
    // A job submitted after the redelivery ends only after the runner scanned the store again.
    const later = await submitter.submit({ type: "count", input: { to: 1 } });
    await ended(jobs, later.id);
    expect(runsOf(message.id)).toEqual([1]);
    expect((await jobs.get(message.id))!.status).toBe("completed");
  });
});
