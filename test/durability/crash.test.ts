import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { freePort, startLocalClickHouse } from "../../services/store/localServer.js";
import { until, untilRead } from "../support/polling.js";
import { AUTH_KEYS, basic, client, iso, KEY_ACME } from "../support/service.js";
import { gzip, postOtlp, protobufBody } from "../otlp/httpSupport.js";

/**
 * The real entry point as its own process, so it can be killed with SIGKILL. `asTerminal`:
 * in a process group of its own, as a shell runs a foreground command (Ctrl-C signals the group).
 */
async function spawnService(env: Record<string, string>, port: number, asTerminal = false): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "services/main.ts"], {
    env: { ...process.env, PORT: String(port), OTLP_GRPC_PORT: "0", HOST: "127.0.0.1", AUTH_KEYS, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "ignore", "inherit"],
    detached: asTerminal,
  });
  const healthy = async () => {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      return (await fetch(`http://127.0.0.1:${port}/health`)).ok;
    } catch {
      return false; // not up yet
    }
  };
  await until(healthy, { timeoutMs: 60_000, everyMs: 100, what: "the service to start" });
  return child;
}

function childrenOf(pid: number): number[] {
  const out = spawnSync("pgrep", ["-P", String(pid)], { encoding: "utf8" }).stdout;
  return out.split("\n").filter(Boolean).map(Number);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Cluster processes must exit by themselves once their primary is gone (they drain first). */
async function waitUntilGone(pids: readonly number[]): Promise<void> {
  expect(await untilRead(() => pids.filter(alive), (left) => left.length === 0, { timeoutMs: 30_000, everyMs: 100 })).toEqual([]);
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

/**
 * Sends OTLP exports (protobuf, gzip, 50 spans each, their attributes mapped to inputs and
 * usage) from several clients until stopped; returns the acknowledged span ids.
 */
function exportUntilKilled(url: string, project: string, clients: number) {
  const acked: string[] = [];
  let running = true;
  const T0 = BigInt(Date.UTC(2026, 10, 3)) * 1_000_000n;
  const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let n = 0; running; n++) {
      const traceId = `${hex(c + 1, 8)}${hex(n, 8)}${"e".repeat(16)}`;
      const spans = Array.from({ length: 50 }, (_, i) => ({
        traceId, spanId: `${hex(c + 1, 4)}${hex(n, 8)}${hex(i, 4)}`, name: "chat", start: T0 + BigInt(n * 50 + i) * 1000n, end: T0 + BigInt(n * 50 + i + 1) * 1000n,
        attributes: { "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": i, "gen_ai.input.messages": JSON.stringify([{ role: "user", content: `q${i}` }]) },
      }));
      try {
        const res = await postOtlp(url, gzip(protobufBody({ spans })), { project, encoding: "gzip" });
        if (res.status === 200) acked.push(...spans.map((s) => s.spanId));
      } catch {
        return; // the process died mid-request: not acknowledged
      }
    }
  });
  return { acked, stop: async () => { running = false; await Promise.all(loops); } };
}

type Load = (url: string, project: string, clients: number) => { acked: string[]; stop: () => Promise<void> };

async function allIds(url: string, project: string): Promise<string[]> {
  return (await client(url).lines<{ id: string }>("/calls/stream_query", { project_id: project, columns: ["id"] })).map((c) => c.id);
}

/** Waits until every acknowledged call is stored, then checks each is stored once. */
async function expectEachOnce(url: string, project: string, acknowledged: readonly string[]): Promise<void> {
  const acked = new Set(acknowledged);
  const ids = await untilRead(() => allIds(url, project), (read) => [...acked].every((id) => read.includes(id)), { timeoutMs: 90_000, everyMs: 250 });
  const seen = new Set(ids);
  expect(ids.length).toBe(seen.size);
  expect([...acked].filter((id) => !seen.has(id))).toEqual([]);
}

async function crashAndRecover(extraEnv: Record<string, string>, signal: NodeJS.Signals = "SIGKILL", loadWith: Load = loadUntilKilled) {
  const database = `crash_${randomBytes(4).toString("hex")}`;
  const env = { CLICKHOUSE_URL: inject("clickhouseUrl"), CLICKHOUSE_DATABASE: database, DATA_DIR: mkdtempSync(join(tmpdir(), "crash-")), ...extraEnv };
  const port = await freePort();
  const first = await spawnService(env, port);
  const load = loadWith(`http://127.0.0.1:${port}`, "acme/crash", 6);
  await new Promise((r) => setTimeout(r, 1500));
  const exited = new Promise<number | null>((done) => first.once("exit", (code) => done(code)));
  const clusterProcesses = childrenOf(first.pid!);
  first.kill(signal);
  const code = await exited;
  if (signal === "SIGTERM") expect(code).toBe(0);
  await waitUntilGone(clusterProcesses);
  await load.stop();
  expect(load.acked.length).toBeGreaterThan(0);
  const second = await spawnService(env, port);
  try {
    await expectEachOnce(`http://127.0.0.1:${port}`, "acme/crash", load.acked);
  } finally {
    second.kill("SIGTERM");
  }
}

describe("durability", () => {
  it("keeps every acknowledged call exactly once across a SIGKILL (embedded mode: the durable log)", async () => {
    await crashAndRecover({});
  });

  it("keeps every acknowledged OTLP span exactly once across a SIGKILL (embedded mode: exports in the durable log)", async () => {
    await crashAndRecover({}, "SIGKILL", exportUntilKilled);
  });

  it("keeps the calls acknowledged while ClickHouse was down, killed before it could insert them: each stored once after a restart", async () => {
    const chDir = mkdtempSync(join(tmpdir(), "log-ch-"));
    const ports = { http: await freePort(), tcp: await freePort() };
    let clickhouse = await startLocalClickHouse(chDir, ports);
    const env = { CLICKHOUSE_URL: clickhouse.url, CLICKHOUSE_DATABASE: `logged_${randomBytes(4).toString("hex")}`, DATA_DIR: mkdtempSync(join(tmpdir(), "log-svc-")) };
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = await spawnService(env, port);
    let second: ChildProcess | null = null;
    try {
      await clickhouse.stop();
      const load = loadUntilKilled(url, "acme/logged", 4);
      await new Promise((r) => setTimeout(r, 1500));
      const exited = new Promise((done) => first.once("exit", done));
      first.kill("SIGKILL");
      await exited;
      await load.stop();
      expect(load.acked.length).toBeGreaterThan(0);
      clickhouse = await startLocalClickHouse(chDir, ports);
      second = await spawnService(env, port);
      await expectEachOnce(url, "acme/logged", load.acked);
    } finally {
      first.kill("SIGKILL");
      second?.kill("SIGTERM");
      await clickhouse.stop();
      rmSync(chDir, { recursive: true, force: true });
      rmSync(env.DATA_DIR, { recursive: true, force: true });
    }
  }, 150_000);

  it("drains and exits 0 on SIGTERM in the middle of a load, keeping every acknowledged call", async () => {
    await crashAndRecover({}, "SIGTERM");
  });

  it("keeps every acknowledged call exactly once across a SIGKILL (Kafka mode)", async () => {
    const suffix = randomBytes(4).toString("hex");
    await crashAndRecover({ KAFKA_BROKERS: inject("kafkaBrokers"), KAFKA_TOPIC: `crash-${suffix}`, KAFKA_GROUP_ID: `crash-${suffix}`, BATCH_MAX_WAIT_MS: "100" });
  }, 150_000);

  it("keeps every acknowledged OTLP span exactly once across a SIGKILL (Kafka mode)", async () => {
    const suffix = randomBytes(4).toString("hex");
    await crashAndRecover({ KAFKA_BROKERS: inject("kafkaBrokers"), KAFKA_TOPIC: `crash-${suffix}`, KAFKA_GROUP_ID: `crash-${suffix}`, BATCH_MAX_WAIT_MS: "100" }, "SIGKILL", exportUntilKilled);
  }, 150_000);

  it("a cluster of two processes drains both on SIGTERM, exits 0 and keeps every acknowledged call", async () => {
    await crashAndRecover({ PROCESSES: "2" }, "SIGTERM");
  });

  it("a cluster whose primary is killed leaves no process behind and loses nothing acknowledged", async () => {
    await crashAndRecover({ PROCESSES: "2" });
  });

  it("keeps calls whole when a call's start and end reach different processes of a cluster", async () => {
    const database = `cluster_${randomBytes(4).toString("hex")}`;
    const port = await freePort();
    const env = { CLICKHOUSE_URL: inject("clickhouseUrl"), CLICKHOUSE_DATABASE: database, DATA_DIR: mkdtempSync(join(tmpdir(), "cluster-")), PROCESSES: "2" };
    const service = await spawnService(env, port);
    const url = `http://127.0.0.1:${port}`;
    const P = "acme/cluster";
    const T = Date.UTC(2026, 10, 5);
    // A new connection per request: the cluster hands connections to its processes in
    // turn, so a round's start batch and end batch, sent at once, land on different ones.
    const post = (body: unknown) =>
      new Promise<number>((done, fail) => {
        const req = httpRequest(`${url}/call/upsert_batch`, { method: "POST", agent: false, headers: { "content-type": "application/json", authorization: basic(KEY_ACME) } }, (res) => {
          res.resume();
          res.on("end", () => done(res.statusCode ?? 0));
        });
        req.on("error", fail);
        req.end(JSON.stringify(body));
      });
    try {
      const rounds = 30;
      for (let r = 0; r < rounds; r++) {
        const ids = Array.from({ length: 10 }, (_, i) => `r${r}-${i}`);
        const starts = ids.map((id, i) => ({ mode: "start", req: { start: { project_id: P, id, op_name: "op", trace_id: `t${r}`, started_at: iso(T + r * 100 + i), attributes: {}, inputs: { i } } } }));
        const ends = ids.map((id, i) => ({ mode: "end", req: { end: { project_id: P, id, ended_at: iso(T + r * 100 + i + 50), output: { r, i }, summary: {} } } }));
        expect(await Promise.all([post({ batch: starts }), post({ batch: ends })])).toEqual([200, 200]);
      }
      // Acknowledged once in each process's log: stored a moment later.
      const read = () => client(url).lines<{ id: string; ended_at: string | null }>("/calls/stream_query", { project_id: P, columns: ["id", "ended_at"] });
      const calls = await untilRead(read, (got) => got.length >= rounds * 10 && got.every((c) => c.ended_at !== null), { timeoutMs: 30_000, everyMs: 100 });
      expect(calls).toHaveLength(rounds * 10);
      expect(calls.filter((c) => c.ended_at === null).map((c) => c.id)).toEqual([]);
    } finally {
      const exited = new Promise<number | null>((done) => service.once("exit", (code) => done(code)));
      service.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
  });

  it("Ctrl-C on `make start` (SIGINT to the whole process group) drains into the local ClickHouse, exits 0 and keeps every acknowledged call", async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), "ctrl-c-")), CLICKHOUSE_DATABASE: "ctrlc" };
    const port = await freePort();
    const first = await spawnService(env, port, true);
    const load = loadUntilKilled(`http://127.0.0.1:${port}`, "acme/ctrl-c", 6);
    await new Promise((r) => setTimeout(r, 1500));
    const exited = new Promise<number | null>((done) => first.once("exit", (code) => done(code)));
    process.kill(-first.pid!, "SIGINT");
    expect(await exited).toBe(0);
    await load.stop();
    expect(load.acked.length).toBeGreaterThan(0);
    const second = await spawnService(env, port, true);
    try {
      const ids = new Set(await allIds(`http://127.0.0.1:${port}`, "acme/ctrl-c"));
      expect(load.acked.filter((id) => !ids.has(id))).toEqual([]);
    } finally {
      const done = new Promise((r) => second.once("exit", r));
      process.kill(-second.pid!, "SIGINT");
      await done;
      rmSync(env.DATA_DIR, { recursive: true, force: true });
    }
  }, 120_000);
});
