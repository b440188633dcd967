import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { sleep } from "../support/polling.js";
import { ensureGone, printLogsIfFailed, expectExactlyOnce, gauge, rssBytes, sampleRss, spawnService, StallingProxy, steadyLoad, storedCount, waitFor, type LoadOptions, type ServiceProcess } from "./faultSupport.js";

/**
 * ClickHouse slow: the service reaches the suite's ClickHouse through a TCP proxy that
 * stalls (inserts and queries hang, as behind a locked table or an overloaded server).
 * The embedded queues must bound what they hold (/metrics gauges sampled against the
 * configured limits, the process's RSS sampled from /proc), refuse beyond it with 429 +
 * Retry-After, and store every acknowledged call once the proxy lets traffic through again.
 */

const MiB = 1024 * 1024;
let service: ServiceProcess | null = null;
let proxy: StallingProxy | null = null;
const dirs: string[] = [];

afterEach(async (context) => {
  printLogsIfFailed(context);
  await ensureGone(service);
  service = null;
  await proxy?.close();
  proxy = null;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Stalled {
  /** Highest value of the gauge sampled while stalled. */
  peakGauge: number;
  rssBefore: number;
  rssPeak: number;
  sentWhileStalled: number;
}

/** Stalls ClickHouse under load until the bound refused `refusals` requests; samples the gauge and RSS meanwhile. */
async function stallUnderLoad(env: Record<string, string>, gaugeName: string, loadOptions: LoadOptions, refusals: number, project: string): Promise<Stalled> {
  const target = new URL(inject("clickhouseUrl"));
  proxy = await StallingProxy.start({ host: target.hostname, port: Number(target.port) });
  const dir = mkdtempSync(join(tmpdir(), "faults-svc-"));
  dirs.push(dir);
  service = await spawnService({ ...env, CLICKHOUSE_URL: proxy.url, CLICKHOUSE_DATABASE: `faults_${randomBytes(4).toString("hex")}`, DATA_DIR: dir, BATCH_MAX_WAIT_MS: "100" });
  const url = service.url!;
  const load = steadyLoad(url, project, loadOptions);
  await waitFor("calls to be stored", async () => (await storedCount(url, project)) > 0, 60_000);
  const rssBefore = rssBytes(service.pid);
  const rss = sampleRss(service.pid);
  proxy.stall();
  const sentBefore = load.sentBytes;
  let peakGauge = 0;
  await waitFor("the bound to refuse requests", async () => {
    peakGauge = Math.max(peakGauge, await gauge(url, gaugeName));
    return load.count(429) >= refusals;
  }, 90_000);
  // A while longer at the bound: it must hold, not creep.
  for (let i = 0; i < 10; i++) {
    peakGauge = Math.max(peakGauge, await gauge(url, gaugeName));
    await sleep(200);
  }
  const sentWhileStalled = load.sentBytes - sentBefore;
  const rssPeak = Math.max(rssBefore, ...rss.stop());
  proxy.flow();
  const ackedBefore = load.acked.length;
  await waitFor("the service to acknowledge again", async () => load.acked.length > ackedBefore, 90_000);
  await load.stop();
  expect(load.badRefusals).toEqual([]);
  expect(load.count(0)).toBe(0);
  await expectExactlyOnce(url, project, load);
  process.stdout.write(`${gaugeName}: peak ${peakGauge}; RSS ${(rssBefore / MiB).toFixed(0)} MiB before the stall, peak ${(rssPeak / MiB).toFixed(0)} MiB; ${(sentWhileStalled / MiB).toFixed(1)} MiB sent while stalled\n`);
  return { peakGauge, rssBefore, rssPeak, sentWhileStalled };
}

describe("faults: ClickHouse slow (a stalling proxy in front of it)", () => {
  it("embedded log: the backlog stops at LOG_MAX_BYTES, 429 + Retry-After beyond, bounded RSS; nothing acknowledged lost", async () => {
    const logMaxBytes = 2 * MiB;
    const largestRequest = 64 * 1024;
    const stalled = await stallUnderLoad({ LOG_MAX_BYTES: String(logMaxBytes) }, "queue_log_backlog_bytes", { clients: 4, callsPerRequest: 20, pauseMs: 20, paddingBytes: 1000 }, 20, "acme/slow-log");
    expect(stalled.peakGauge).toBeGreaterThan(0);
    expect(stalled.peakGauge).toBeLessThanOrEqual(logMaxBytes + largestRequest);
    expect(stalled.rssPeak - stalled.rssBefore).toBeLessThan(256 * MiB);
  }, 240_000);
});
