import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { freePort, startLocalClickHouse, type LocalClickHouse } from "../../services/store/localServer.js";
import { sleep } from "../support/polling.js";
import { client, iso } from "../support/service.js";
import { ensureGone, printLogsIfFailed, expectExactlyOnce, MOCK_BROKER_PACE, FAULT_PAUSE_MS, spawnService, steadyLoad, storedCount, waitFor, type ServiceProcess } from "./faultSupport.js";

/**
 * ClickHouse stopped during a steady load and started again (a private server per test, on
 * the same ports): Kafka mode keeps acknowledging, the embedded log acknowledges until its
 * bound and then refuses with 429/503 + Retry-After; afterwards every acknowledged call is
 * stored exactly once. The log's lag bound (MAX_LAG_MS) refuses bulk writes only while
 * the worker still counts as storing; once it stalls, they are acknowledged again.
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
  it(`Kafka mode: ClickHouse stopped for FAULT_PAUSE_MS (${FAULT_PAUSE_MS} ms) under load; ingest answers throughout (429 + Retry-After for bulk writes while the workers' lag counts, acknowledged once they count as stalled), every acknowledged call stored once after it is back`, async () => {
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
    expect(load.badRefusals).toEqual([]);
    expect([...load.statuses.keys()].filter((status) => status !== 200 && status !== 429)).toEqual([]);
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

  it("embedded log with a lag bound: ClickHouse stopped, a bulk write is held then answered 429 + Retry-After while a call start is 200; once the worker counts as stalled, bulk writes are acknowledged; all of them stored once it is back", async () => {
    const ch = await privateClickHouse();
    const P = "acme/lag-bound";
    const env = {
      CLICKHOUSE_URL: ch.url,
      CLICKHOUSE_DATABASE: `faults_${randomBytes(4).toString("hex")}`,
      DATA_DIR: tempDir("faults-svc-"),
      // A record not stored within the batching wait and 1 ms puts the worker past the bound; 5 calls make a bulk write.
      MAX_LAG_MS: "1",
      LAG_BULK_ITEMS: "4",
      BATCH_MAX_WAIT_MS: "100",
    };
    const service = await start(env);
    const api = client(service.url!);
    const T = Date.UTC(2026, 10, 27);
    const startOf = (id: string) => ({ project_id: P, id, op_name: "op", trace_id: id, started_at: iso(T), attributes: {}, inputs: {} });
    const bulk = (name: string) => ({ batch: Array.from({ length: 5 }, (_, i) => ({ mode: "start", req: { start: startOf(`${name}-${i}`) } })) });
    const ids = (name: string) => Array.from({ length: 5 }, (_, i) => `${name}-${i}`);
    expect((await api.post("/call/upsert_batch", bulk("before"))).status).toBe(200);
    await waitFor("the worker to store calls", async () => (await storedCount(service.url!, P)) === 5, 60_000);
    await clickhouse!.stop();
    // Not stored from now on: the worker is behind, and storing (it stored a batch just now).
    expect((await api.post("/call/start", { start: startOf("single-1") })).status).toBe(200);
    // The bound counts past the batching wait (MAX_LAG_MS + BATCH_MAX_WAIT_MS: 101 ms here).
    await sleep(300);
    const refused = await api.post("/call/upsert_batch", bulk("refused"));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toEqual({ detail: expect.stringMatching(/behind/), message: expect.stringMatching(/behind/) });
    expect((await api.post("/call/start", { start: startOf("single-2") })).status).toBe(200);
    // Nothing stored for a while: the worker counts as stalled, and bulk writes are acknowledged again.
    const acked: string[] = [];
    let attempt = 0;
    await waitFor("a bulk write to be acknowledged while ClickHouse is down", async () => {
      const name = `down-${attempt++}`;
      const res = await api.post("/call/upsert_batch", bulk(name));
      await res.text();
      if (res.status === 200) acked.push(name);
      else expect(res.status).toBe(429);
      return res.status === 200;
    }, 90_000);
    expect((await api.post("/call/upsert_batch", bulk("down-again"))).status).toBe(200);
    await ch.restart();
    const expected = [...ids("before"), "single-1", "single-2", ...acked.flatMap(ids), ...ids("down-again")].sort();
    await waitFor("every acknowledged call to be stored", async () => (await storedCount(service.url!, P).catch(() => 0)) >= expected.length, 90_000);
    const stored = await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, columns: ["id"] });
    expect(stored.map((c) => c.id).sort()).toEqual(expected);
  }, 180_000);
});
