import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { freePort, startLocalClickHouse, type LocalClickHouse } from "../../services/store/localServer.js";
import { ensureGone, printLogsIfFailed, expectExactlyOnce, MOCK_BROKER_PACE, FAULT_PAUSE_MS, sleep, spawnService, steadyLoad, storedCount, waitFor, type ServiceProcess } from "./faultSupport.js";

/**
 * ClickHouse stopped during a steady load and started again (a private server per test, on
 * the same ports): Kafka mode keeps acknowledging, the embedded log acknowledges until its
 * bound and then refuses with 429/503 + Retry-After; afterwards every acknowledged call is
 * stored exactly once.
 */

const started: ServiceProcess[] = [];
const dirs: string[] = [];
let clickhouse: LocalClickHouse | null = null;

afterEach(async (context) => {
  printLogsIfFailed(context);
  for (const p of started.splice(0)) await ensureGone(p);
  await clickhouse?.stop();
  clickhouse = null;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** A private ClickHouse that can be stopped and started again on the same ports. */
async function privateClickHouse(): Promise<{ url: string; restart(): Promise<void> }> {
  const dir = tempDir("faults-ch-");
  const ports = { http: await freePort(), tcp: await freePort() };
  clickhouse = await startLocalClickHouse(dir, ports);
  return {
    url: clickhouse.url,
    restart: async () => {
      clickhouse = await startLocalClickHouse(dir, ports);
    },
  };
}

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const p = await spawnService(env);
  started.push(p);
  return p;
}

describe("faults: ClickHouse down", () => {
  it(`Kafka mode: ClickHouse stopped for FAULT_PAUSE_MS (${FAULT_PAUSE_MS} ms) under load; ingest acknowledges throughout, every acknowledged call stored once after it is back`, async () => {
    const ch = await privateClickHouse();
    const suffix = randomBytes(4).toString("hex");
    const env = {
      CLICKHOUSE_URL: ch.url,
      CLICKHOUSE_DATABASE: `faults_${suffix}`,
      KAFKA_BROKERS: inject("kafkaBrokers"),
      KAFKA_TOPIC: `faults-${suffix}`,
      KAFKA_GROUP_ID: `faults-${suffix}`,
      BATCH_MAX_WAIT_MS: "100",
      DATA_DIR: tempDir("faults-svc-"),
    };
    const P = "acme/ch-down-kafka";
    const ingest = await start({ ...env, ROLE: "ingest,query" });
    await start({ ...env, ROLE: "worker" });
    const load = steadyLoad(ingest.url!, P, MOCK_BROKER_PACE);
    await waitFor("the worker to store calls", async () => (await storedCount(ingest.url!, P)) > 0, 60_000);
    await clickhouse!.stop();
    const ackedBefore = load.acked.length;
    await sleep(FAULT_PAUSE_MS);
    const ackedWhileDown = load.acked.length - ackedBefore;
    await ch.restart();
    await sleep(1000);
    await load.stop();
    expect(ackedWhileDown).toBeGreaterThan(0);
    expect([...load.statuses.keys()]).toEqual([200]);
    await expectExactlyOnce(ingest.url!, P, load);
  }, 60_000 + FAULT_PAUSE_MS * 2);

  it("embedded log: ClickHouse stopped under load; acknowledged until LOG_MAX_BYTES, then 429/503 + Retry-After; nothing acknowledged lost", async () => {
    const ch = await privateClickHouse();
    const logMaxBytes = 4 * 1024 * 1024;
    const env = {
      CLICKHOUSE_URL: ch.url,
      CLICKHOUSE_DATABASE: `faults_${randomBytes(4).toString("hex")}`,
      DATA_DIR: tempDir("faults-svc-"),
      LOG_MAX_BYTES: String(logMaxBytes),
      BATCH_MAX_WAIT_MS: "100",
    };
    const P = "acme/ch-down-log";
    const service = await start(env);
    const load = steadyLoad(service.url!, P, { clients: 2, pauseMs: 50, paddingBytes: 500 });
    await waitFor("the worker to store calls", async () => (await storedCount(service.url!, P)) > 0, 60_000);
    // Counted from the moment the stop begins: ClickHouse 18.16 takes seconds to stop (it waits
    // for the service's open connections) while already refusing inserts, and under this load
    // the log can reach its bound within them.
    const ackedBefore = load.acked.length;
    const refusedBefore = load.count(429) + load.count(503);
    await clickhouse!.stop();
    // Down until the log's bound refused some requests (bounded: the waitFor's deadline).
    await waitFor("the log's bound to refuse requests", async () => load.count(429) + load.count(503) >= refusedBefore + 5, 60_000);
    const ackedWhileDown = load.acked.length - ackedBefore;
    await ch.restart();
    await waitFor("the service to acknowledge again", async () => load.acked.length > ackedBefore + ackedWhileDown, 60_000);
    await load.stop();
    expect(ackedWhileDown).toBeGreaterThan(0);
    expect(load.count(429)).toBeGreaterThan(0);
    expect(load.badRefusals).toEqual([]);
    expect(load.count(0)).toBe(0);
    await expectExactlyOnce(service.url!, P, load);
  }, 180_000);
});
