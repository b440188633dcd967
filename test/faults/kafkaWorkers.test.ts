import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { sleep } from "../support/polling.js";
import { ensureGone, printLogsIfFailed, expectExactlyOnce, MOCK_BROKER_PACE, spawnService, steadyLoad, storedCount, waitFor, type ServiceProcess } from "./faultSupport.js";

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

function kafkaEnv(): Record<string, string> {
  const suffix = randomBytes(4).toString("hex");
  const dir = mkdtempSync(join(tmpdir(), "faults-"));
  dirs.push(dir);
  return {
    CLICKHOUSE_URL: inject("clickhouseUrl"),
    CLICKHOUSE_DATABASE: `faults_${suffix}`,
    KAFKA_BROKERS: inject("kafkaBrokers"),
    KAFKA_TOPIC: `faults-${suffix}`,
    KAFKA_GROUP_ID: `faults-${suffix}`,
    BATCH_MAX_WAIT_MS: "100",
    DATA_DIR: dir,
  };
}

async function start(env: Record<string, string>, role: string): Promise<ServiceProcess> {
  const p = await spawnService({ ...env, ROLE: role });
  started.push(p);
  return p;
}

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
    expect(load.uncertain).toEqual([]);
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
    expect(load.uncertain).toEqual([]);
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
