import { rmSync } from "node:fs";
import { afterEach, describe, expect, inject, it } from "vitest";
import { sleep } from "../support/polling.js";
import { ensureGone, expectExactlyOnce, gauge, kafkaFaultEnv, MOCK_BROKER_PACE, printLogsIfFailed, type ServiceProcess, spawnRole, steadyLoad, storedCalls, storedCount, waitFor } from "./faultSupport.js";

/**
 * Kafka mode with the roles in separate processes (the suite's ClickHouse and broker, a
 * topic and consumer group of each test's own; auto-created topics have 4 partitions):
 * workers killed with SIGKILL, or stopped with SIGTERM, while calls keep arriving.
 */

const started: ServiceProcess[] = [];
const dirs: string[] = [];

afterEach(async (context) => {
  printLogsIfFailed(context);
  for (const p of started.splice(0)) await ensureGone(p);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const kafkaEnv = (): Record<string, string> => kafkaFaultEnv(inject("kafkaBrokers"), dirs);
const start = (env: Record<string, string>, role: string): Promise<ServiceProcess> => spawnRole(started, env, role);

/** Waits until the workers stored some of the load, so that a kill lands while they write. */
async function whileWriting(url: string, project: string): Promise<void> {
  await waitFor("the worker to store calls", async () => (await storedCount(url, project)) > 0, 60_000);
}

describe("faults: workers (Kafka mode, separate roles)", () => {
  it("a worker killed with SIGKILL while it writes, then restarted: every acknowledged call once, thread turn counts and usage sums exact", async () => {
    const env = kafkaEnv();
    const P = "acme/worker-kill";
    const ingest = await start(env, "ingest,query");
    const worker = await start(env, "worker");
    const load = steadyLoad(ingest.url!, P, MOCK_BROKER_PACE);
    await whileWriting(ingest.url!, P);
    worker.child.kill("SIGKILL");
    await worker.exited;
    await sleep(1500);
    await start(env, "worker");
    await sleep(1500);
    await load.stop();
    expect(load.badRefusals).toEqual([]);
    // Every request answered: acknowledged, or refused for the group's lag (429 + Retry-After, MAX_LAG_MS).
    expect([...load.statuses.keys()].filter((status) => status !== 200 && status !== 429)).toEqual([]);
    await expectExactlyOnce(ingest.url!, P, load);
  }, 150_000);

  it("two workers in one consumer group share the partitions; one killed, the other takes its partitions and finishes the load, each call once", async () => {
    const env = kafkaEnv();
    const P = "acme/two-workers";
    const ingest = await start(env, "ingest,query");
    const first = await start(env, "worker");
    await start(env, "worker");
    const load = steadyLoad(ingest.url!, P, MOCK_BROKER_PACE);
    await whileWriting(ingest.url!, P);
    await sleep(1500);
    first.child.kill("SIGKILL");
    await first.exited;
    await sleep(1500);
    await load.stop();
    expect(load.badRefusals).toEqual([]);
    // Every request answered: acknowledged, or refused for the group's lag (429 + Retry-After, MAX_LAG_MS).
    expect([...load.statuses.keys()].filter((status) => status !== 200 && status !== 429)).toEqual([]);
    // The survivor gets the dead worker's partitions once its session times out (10 s).
    await expectExactlyOnce(ingest.url!, P, load);
  }, 240_000);

  it("SIGTERM to the worker and to ingest under load: both drain and exit 0; after a restart every acknowledged call is stored once", async () => {
    const env = kafkaEnv();
    const P = "acme/graceful";
    const ingest = await start(env, "ingest,query");
    const worker = await start(env, "worker");
    const load = steadyLoad(ingest.url!, P, MOCK_BROKER_PACE);
    await whileWriting(ingest.url!, P);
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    await sleep(500);
    ingest.child.kill("SIGTERM");
    expect(await ingest.exited).toBe(0);
    await load.stop();
    // Refused during the drain (503 + Retry-After) or cut when the process exited: never acknowledged.
    expect(load.badRefusals).toEqual([]);
    const reader = await start(env, "worker,query");
    await expectExactlyOnce(reader.url!, P, load);
  }, 150_000);
});

describe("faults: ingest and the brokers' retention (Kafka mode, separate roles)", () => {
  it("an ingest process killed (SIGKILL) with requests in flight: what it acknowledged is stored once; what it did not may be retried", async () => {
    const env = kafkaEnv();
    const P = "acme/ingest-kill";
    const reader = await start(env, "worker,query");
    const ingest = await start(env, "ingest");
    const load = steadyLoad(ingest.url!, P, { clients: 4, callsPerRequest: 50, pauseMs: 0 });
    await whileWriting(reader.url!, P);
    ingest.child.kill("SIGKILL");
    await ingest.exited;
    await load.stop();
    // Cut mid-request: never acknowledged, so a client would send them again.
    expect(load.count(0)).toBeGreaterThan(0);
    expect(load.badRefusals).toEqual([]);
    await expectExactlyOnce(reader.url!, P, load);
  }, 150_000);

  it("a worker group that fell behind the brokers' retention: the offsets it never read are logged as an error naming them and counted in /metrics, and what was stored is stored once", async () => {
    // No lag bound here, so that the backlog outgrows the mock broker's few MB per partition (its retention).
    const env: Record<string, string> = { ...kafkaEnv(), MAX_LAG_MS: "0" };
    const P = "acme/retention";
    const ingest = await start(env, "ingest");
    let worker = await start(env, "worker,query");
    // The group commits offsets on every partition first, then stops reading.
    const first = steadyLoad(ingest.url!, P, { clients: 1, callsPerRequest: 40, pauseMs: 0 });
    await waitFor("the first calls stored", async () => (await storedCount(worker.url!, P)) >= 40);
    await first.stop();
    await waitFor("every first call stored", async () => (await storedCount(worker.url!, P)) === first.acked.length);
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    // Random padding: the publisher's gzip cannot shrink it, so the partitions hold past the mock's retention.
    const flood = steadyLoad(ingest.url!, P, { clients: 4, callsPerRequest: 100, pauseMs: 0, paddingBytes: 2_000, randomPadding: true });
    await waitFor("the backlog past the brokers' retention", async () => flood.sentBytes > 40 * 1024 * 1024, 120_000);
    await flood.stop();
    expect(flood.badRefusals).toEqual([]);
    worker = await start(env, "worker,query");
    await waitFor("the worker to find the trimmed offsets", async () => (await gauge(worker.url!, "queue_skipped_messages_total")) > 0, 60_000);
    const lost = worker.recentLog.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => typeof l.msg === "string" && l.msg.startsWith("messages lost"));
    expect(lost.length).toBeGreaterThan(0);
    for (const line of lost) expect(line).toMatchObject({ level: 50, topic: env.KAFKA_TOPIC, partition: expect.any(Number), from: expect.any(String), to: expect.any(String), skipped: expect.any(Number) });
    // The rest is stored, once. A skipped offset is a record: the parts of one send's calls
    // that fell in its partition, each call's start and end together (one key, one record).
    const acked = [...first.acked, ...flood.acked];
    let ids: string[] = [];
    await waitFor("the worker to store what the brokers kept", async () => {
      const before = ids.length;
      ids = (await storedCalls(worker.url!, P)).map((c) => c.id);
      return ids.length > first.acked.length && ids.length === before;
    }, 120_000);
    expect(new Set(ids).size).toBe(ids.length);
    const skipped = await gauge(worker.url!, "queue_skipped_messages_total");
    const missing = acked.length - ids.length;
    expect(missing).toBeGreaterThan(0);
    // Each skipped record held at least one whole call (half of one if a record was cut between a start and its end).
    expect(missing).toBeGreaterThanOrEqual(Math.floor(skipped / 2));
  }, 300_000);
});
