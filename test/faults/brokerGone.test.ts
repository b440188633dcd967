import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { startMockKafka, type MockKafka } from "../support/mockKafka.js";
import { client } from "../support/service.js";
import { ensureGone, printLogsIfFailed, expectExactlyOnce, MOCK_BROKER_PACE, turnsBatch, spawnService, steadyLoad, storedCount, waitFor, type ServiceProcess } from "./faultSupport.js";

/**
 * The broker gone (a private mock broker per test, its process paused or stopped): ingest
 * answers 503 + Retry-After within KAFKA_SEND_TIMEOUT_MS instead of holding requests for
 * KafkaJS's retries and request timeouts, and recovers by itself when the broker answers again.
 */

const SEND_TIMEOUT_MS = 3_000;
/** The probe's own limit: a hung publish (no send timeout) fails the test instead of hanging it. */
const PROBE_LIMIT_MS = SEND_TIMEOUT_MS + 15_000;

let kafka: MockKafka | null = null;
let service: ServiceProcess | null = null;
const dirs: string[] = [];

afterEach(async (context) => {
  printLogsIfFailed(context);
  await ensureGone(service);
  service = null;
  if (kafka) {
    try {
      process.kill(kafka.pid, "SIGCONT");
    } catch {
      // already gone
    }
    await kafka.stop();
  }
  kafka = null;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** One request of one call (a turn, as the load's); answers its status, Retry-After and time taken. */
async function probe(url: string, project: string, id: string): Promise<{ status: number; retryAfter: number; ms: number }> {
  const began = Date.now();
  const res = await client(url).post("/call/upsert_batch", { batch: turnsBatch(project, [id]) });
  await res.text();
  return { status: res.status, retryAfter: Number(res.headers.get("retry-after")), ms: Date.now() - began };
}

async function startWithBroker(): Promise<{ url: string; project: string }> {
  kafka = await startMockKafka();
  const suffix = randomBytes(4).toString("hex");
  const dir = mkdtempSync(join(tmpdir(), "faults-svc-"));
  dirs.push(dir);
  service = await spawnService({
    CLICKHOUSE_URL: inject("clickhouseUrl"),
    CLICKHOUSE_DATABASE: `faults_${suffix}`,
    KAFKA_BROKERS: kafka.brokers,
    KAFKA_TOPIC: `faults-${suffix}`,
    KAFKA_GROUP_ID: `faults-${suffix}`,
    KAFKA_SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS),
    BATCH_MAX_WAIT_MS: "100",
    DATA_DIR: dir,
  });
  return { url: service.url!, project: `acme/broker-${suffix}` };
}

describe("faults: Kafka broker gone", () => {
  it(`a broker that stops answering (paused): 503 + Retry-After within KAFKA_SEND_TIMEOUT_MS (${SEND_TIMEOUT_MS} ms here); when it answers again ingest recovers by itself and every acknowledged call is stored once`, async () => {
    const { url, project } = await startWithBroker();
    const load = steadyLoad(url, project, MOCK_BROKER_PACE);
    await waitFor("calls to be stored", async () => (await storedCount(url, project)) > 0, 60_000);
    process.kill(kafka!.pid, "SIGSTOP");
    const during = await probe(url, project, "c90-0-0");
    process.stdout.write(`broker paused: answered ${during.status} in ${during.ms} ms\n`);
    expect(during.status).toBe(503);
    expect(during.retryAfter).toBeGreaterThanOrEqual(1);
    expect(during.ms).toBeLessThan(PROBE_LIMIT_MS);
    // Refused, but its send may still be in flight to the paused broker, which takes it once
    // it runs again: a 503 for data that is kept is allowed (a client's retry rewrites the call).
    load.uncertain.push("c90-0-0");
    process.kill(kafka!.pid, "SIGCONT");
    const ackedBefore = load.acked.length;
    await waitFor("ingest to acknowledge again", async () => load.acked.length > ackedBefore, 60_000);
    await load.stop();
    expect(load.badRefusals).toEqual([]);
    await expectExactlyOnce(url, project, load);
  }, 240_000);

  it(`a broker process gone: 503 + Retry-After within KAFKA_SEND_TIMEOUT_MS (${SEND_TIMEOUT_MS} ms here), each time`, async () => {
    const { url, project } = await startWithBroker();
    const first = await probe(url, project, "c91-0-0");
    expect(first.status).toBe(200);
    await kafka!.stop();
    for (const id of ["c92-0-0", "c92-1-0"]) {
      const gone = await probe(url, project, id);
      process.stdout.write(`broker gone: answered ${gone.status} in ${gone.ms} ms\n`);
      expect(gone.status).toBe(503);
      expect(gone.retryAfter).toBeGreaterThanOrEqual(1);
      expect(gone.ms).toBeLessThan(PROBE_LIMIT_MS);
    }
  }, 120_000);
});
