import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { freePort, startLocalClickHouse } from "../../services/store/localServer.js";
import { AUTH_KEYS, client, iso, startTestService } from "../support/service.js";

/** The real entry point as its own process, so it can be killed with SIGKILL. */
async function spawnService(env: Record<string, string>, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "services/main.ts"], {
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", AUTH_KEYS, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return child;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error("service did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Sends batches of starts from several clients until stopped; returns the acknowledged ids. */
function loadUntilKilled(url: string, project: string, clients: number) {
  const acked: string[] = [];
  let running = true;
  const api = client(url);
  const T = Date.UTC(2026, 10, 3);
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let n = 0; running; n++) {
      const ids = Array.from({ length: 50 }, (_, i) => `c${c}-${n}-${i}`);
      const batch = ids.map((id, i) => ({ mode: "start", req: { start: { project_id: project, id, op_name: "op", trace_id: `t${c}`, started_at: iso(T + n * 50 + i), attributes: {}, inputs: { i } } } }));
      try {
        const res = await api.post("/call/upsert_batch", { batch });
        if (res.status === 200) acked.push(...ids);
        else await res.text();
      } catch {
        return; // the process died mid-request: not acknowledged
      }
    }
  });
  return { acked, stop: async () => { running = false; await Promise.all(loops); } };
}

async function allIds(url: string, project: string): Promise<string[]> {
  return (await client(url).lines<{ id: string }>("/calls/stream_query", { project_id: project, columns: ["id"] })).map((c) => c.id);
}

async function crashAndRecover(extraEnv: Record<string, string>, signal: NodeJS.Signals = "SIGKILL") {
  const database = `crash_${randomBytes(4).toString("hex")}`;
  const env = { CLICKHOUSE_URL: inject("clickhouseUrl"), CLICKHOUSE_DATABASE: database, DATA_DIR: mkdtempSync(join(tmpdir(), "crash-")), ...extraEnv };
  const port = await freePort();
  const first = await spawnService(env, port);
  const load = loadUntilKilled(`http://127.0.0.1:${port}`, "acme/crash", 6);
  await new Promise((r) => setTimeout(r, 1500));
  const exited = new Promise<number | null>((done) => first.once("exit", (code) => done(code)));
  first.kill(signal);
  const code = await exited;
  if (signal === "SIGTERM") expect(code).toBe(0);
  await load.stop();
  expect(load.acked.length).toBeGreaterThan(0);
  const second = await spawnService(env, port);
  try {
    const deadline = Date.now() + 90_000;
    let ids: string[] = [];
    const acked = new Set(load.acked);
    while (Date.now() < deadline) {
      ids = await allIds(`http://127.0.0.1:${port}`, "acme/crash");
      if ([...acked].every((id) => ids.includes(id))) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const seen = new Set(ids);
    expect(ids.length).toBe(seen.size);
    expect([...acked].filter((id) => !seen.has(id))).toEqual([]);
  } finally {
    second.kill("SIGTERM");
  }
}

describe("durability", () => {
  it("keeps every acknowledged call exactly once across a SIGKILL (embedded mode)", async () => {
    await crashAndRecover({});
  });

  it("drains and exits 0 on SIGTERM in the middle of a load, keeping every acknowledged call", async () => {
    await crashAndRecover({}, "SIGTERM");
  });

  it("keeps every acknowledged call exactly once across a SIGKILL (Kafka mode)", async () => {
    const suffix = randomBytes(4).toString("hex");
    await crashAndRecover({ KAFKA_BROKERS: inject("kafkaBrokers"), KAFKA_TOPIC: `crash-${suffix}`, KAFKA_GROUP_ID: `crash-${suffix}`, BATCH_MAX_WAIT_MS: "100" });
  }, 150_000);

  it("answers 503 with Retry-After while ClickHouse is down, and loses nothing acknowledged", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ch-down-"));
    const ports = { http: await freePort(), tcp: await freePort() };
    let clickhouse = await startLocalClickHouse(dir, ports);
    const service = await startTestService({ CLICKHOUSE_URL: clickhouse.url });
    const api = client(service.url);
    const P = "acme/outage";
    const call = (id: string) => ({ start: { project_id: P, id, op_name: "op", trace_id: "t", started_at: iso(Date.UTC(2026, 10, 4)), attributes: {}, inputs: {} } });
    try {
      expect((await api.post("/call/start", call("before"))).status).toBe(200);
      await clickhouse.stop();
      const during = await api.post("/call/start", call("during"));
      expect(during.status).toBe(503);
      expect(Number(during.headers.get("retry-after"))).toBeGreaterThan(0);
      const health = await fetch(`${service.url}/health`);
      expect(health.status).toBe(503);
      clickhouse = await startLocalClickHouse(dir, ports);
      expect((await api.post("/call/start", call("after"))).status).toBe(200);
      expect(await allIds(service.url, P)).toEqual(["after", "before"].sort());
    } finally {
      await service.stop();
      await clickhouse.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
