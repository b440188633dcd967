import { randomBytes } from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, connect, type Server, type Socket } from "node:net";
import { expect, inject, type TestContext } from "vitest";
import { freePort } from "../../services/store/localServer.js";
import { isoToMicros } from "../../services/times.js";
import { sleep, until } from "../support/polling.js";
import type { ThreadSchema } from "../../services/contract/threads.js";
import { AUTH_KEYS, client, iso } from "../support/service.js";

/**
 * What the fault tests share: the service as processes of its own (to kill them), a
 * steady load that remembers which calls were acknowledged, the checks that every
 * acknowledged call is stored exactly once with its thread and usage figures, a TCP proxy
 * that can stall, and the RSS of a process from /proc.
 */

/** The pause of ClickHouse in the Kafka-mode outage test (the 30 s by default). */
export const FAULT_PAUSE_MS = Number(process.env.FAULT_PAUSE_MS ?? 30_000);

/**
 * FAULT_LOG_LEVEL=info (diagnosis): the service processes' logs on the test's output.
 * Unset, each process logs at warn into a buffer of its last lines (`recentLog`), which a
 * failed test prints (`printRecentLogs`).
 */
const LOG_LEVEL = process.env.FAULT_LOG_LEVEL;
const RECENT_LINES = 400;

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly url: string | null;
  readonly pid: number;
  /** Resolves with the exit code once the process is gone. */
  readonly exited: Promise<number | null>;
  /** Its last log lines (when FAULT_LOG_LEVEL is unset). */
  readonly recentLog: string[];
}

/**
 * services/main.ts as a process. With an HTTP role it resolves once /health answers 200;
 * a worker alone has no HTTP server and resolves at once (the checks wait for its writes).
 */
export async function spawnService(env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "services/main.ts"], {
    env: { ...process.env, PORT: String(port), OTLP_GRPC_PORT: "0", HOST: "127.0.0.1", AUTH_KEYS, LOG_LEVEL: LOG_LEVEL ?? "warn", ...env },
    stdio: ["ignore", LOG_LEVEL ? "inherit" : "pipe", "inherit"],
  });
  const recentLog: string[] = [];
  child.stdout?.setEncoding("utf8");
  let partial = "";
  child.stdout?.on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop()!;
    recentLog.push(...lines);
    if (recentLog.length > RECENT_LINES) recentLog.splice(0, recentLog.length - RECENT_LINES);
  });
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  const role = env.ROLE ?? "all";
  const url = role === "worker" ? null : `http://127.0.0.1:${port}`;
  if (url !== null) {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`service (${role}) exited with ${child.exitCode}`);
      return (await fetch(`${url}/health`).catch(() => null))?.ok; // null: not listening yet
    }, { what: `service (${role}) to start`, timeoutMs: 60_000, everyMs: 100 });
  }
  const service = { child, url, pid: child.pid!, exited, recentLog };
  spawnedInTest.push(service);
  return service;
}

/** The processes spawned since the last `printLogsIfFailed`. */
const spawnedInTest: ServiceProcess[] = [];

/**
 * A Kafka-mode service's environment on the suite's ClickHouse and `brokers`, with a database,
 * topic, consumer group and data directory of its own (the directory pushed on `dirs`, for the
 * caller to remove); `env` adds to it or overrides it.
 */
export function kafkaFaultEnv(brokers: string, dirs: string[], env: Record<string, string> = {}): Record<string, string> {
  const suffix = randomBytes(4).toString("hex");
  const dir = mkdtempSync(join(tmpdir(), "faults-"));
  dirs.push(dir);
  return {
    CLICKHOUSE_URL: inject("clickhouseUrl"),
    CLICKHOUSE_DATABASE: `faults_${suffix}`,
    KAFKA_BROKERS: brokers,
    KAFKA_TOPIC: `faults-${suffix}`,
    KAFKA_GROUP_ID: `faults-${suffix}`,
    BATCH_MAX_WAIT_MS: "100",
    DATA_DIR: dir,
    ...env,
  };
}

/** Starts the service in `role` (ROLE) and notes it in `started`, for the caller to stop. */
export async function spawnRole(started: ServiceProcess[], env: Record<string, string>, role: string): Promise<ServiceProcess> {
  const p = await spawnService({ ...env, ROLE: role });
  started.push(p);
  return p;
}

/** In afterEach: a failed test's processes' last log lines on its output. */
export function printLogsIfFailed(context: TestContext): void {
  const processes = spawnedInTest.splice(0);
  if (context.task.result?.state !== "fail") return;
  for (const p of processes) {
    process.stdout.write(`--- pid ${p.pid} (${p.url ?? "worker"}), last ${p.recentLog.length} log lines ---\n${p.recentLog.join("\n")}\n`);
  }
}

/** Stops a process if it still runs (SIGKILL: used in `finally` blocks). */
export async function ensureGone(p: ServiceProcess | null): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill("SIGKILL");
  await p.exited;
}

export const THREADS_PER_CLIENT = 3;
const USAGE = { requests: 1, prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 };

export interface Load {
  /** Ids of the calls whose request was answered 200. */
  readonly acked: string[];
  /** Ids of calls sent whose answer was not 200 (or never came): they may or may not be stored. */
  readonly uncertain: string[];
  /** Answers by status. */
  readonly statuses: Map<number, number>;
  /** Refusals (not 200) that were not 429/503 with a Retry-After of at least one second. */
  readonly badRefusals: string[];
  /** Bytes of the request bodies sent. */
  sentBytes: number;
  threadOf(id: string): string;
  count(status: number): number;
  stop(): Promise<void>;
}

/**
 * The pace of loads through the mock broker: librdkafka's mock cluster answers a fetch with
 * one message set per partition (one producer send's share), so a worker there stores one
 * send per partition per insert cycle, whatever the backlog (real Kafka fills a fetch up to
 * its byte limit). Few large requests keep the worker's backlog short.
 */
export const MOCK_BROKER_PACE: LoadOptions = { clients: 1, callsPerRequest: 100, pauseMs: 1000 };

export interface LoadOptions {
  clients?: number;
  callsPerRequest?: number;
  /** Pause between two requests of one client. */
  pauseMs?: number;
  /** Bytes of padding in each call's inputs (to fill byte bounds faster). */
  paddingBytes?: number;
  /** The padding random, different in each call (gzip, as the Kafka publisher compresses, cannot shrink it). */
  randomPadding?: boolean;
}

/** The thread of a load's call `c<client>-<request>-<i>`: one of THREADS_PER_CLIENT per client. */
export const threadOf = (id: string) => `th-${id.split("-")[0]}-${Number(id.split("-")[1]) % THREADS_PER_CLIENT}`;

/** An upsert_batch body's items: each call a turn of its thread, start and end (with usage) together. */
export function turnsBatch(project: string, ids: readonly string[], padding: string | (() => string) = ""): unknown[] {
  const T = Date.UTC(2026, 10, 20);
  return ids.flatMap((id) => {
    const [c, n, i] = id.slice(1).split("-").map(Number) as [number, number, number];
    const at = T + (c * 1_000_000 + n * 1000 + i) * 10;
    // Durations of 1 to 13 ms, so that a thread's percentiles and last turn depend on which turns it counted.
    const ms = 1 + ((n * 7 + i) % 13);
    return [
      { mode: "start", req: { start: { project_id: project, id, op_name: "op", trace_id: id, thread_id: threadOf(id), turn_id: id, started_at: iso(at), attributes: {}, inputs: { i, padding: typeof padding === "string" ? padding : padding() } } } },
      { mode: "end", req: { end: { project_id: project, id, ended_at: iso(at + ms), output: { n }, summary: { usage: { m: USAGE } } } } },
    ];
  });
}

/**
 * Clients sending /call/upsert_batch in a loop, each call a turn of one of the client's
 * threads (its start and its end, with usage, in the same request), until stopped.
 */
export function steadyLoad(url: string, project: string, options: LoadOptions = {}): Load {
  const { clients = 4, callsPerRequest = 20, pauseMs = 20, paddingBytes = 0, randomPadding = false } = options;
  const api = client(url);
  const padding = randomPadding ? () => randomBytes(Math.ceil((paddingBytes * 3) / 4)).toString("base64") : "x".repeat(paddingBytes);
  let running = true;
  const load: Load = {
    acked: [],
    uncertain: [],
    statuses: new Map(),
    badRefusals: [],
    sentBytes: 0,
    threadOf,
    count: (status) => load.statuses.get(status) ?? 0,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let n = 0; running; n++) {
      const ids = Array.from({ length: callsPerRequest }, (_, i) => `c${c}-${n}-${i}`);
      const body = JSON.stringify({ batch: turnsBatch(project, ids, padding) });
      load.sentBytes += body.length;
      let status = 0;
      try {
        const res = await api.post("/call/upsert_batch", body);
        status = res.status;
        await res.text();
        const retryAfter = Number(res.headers.get("retry-after"));
        if (status !== 200 && !((status === 429 || status === 503) && retryAfter >= 1)) load.badRefusals.push(`${status} retry-after=${res.headers.get("retry-after")}`);
      } catch {
        status = 0; // no answer: the connection failed
      }
      load.statuses.set(status, load.count(status) + 1);
      (status === 200 ? load.acked : load.uncertain).push(...ids);
      await sleep(status === 200 ? pauseMs : Math.max(pauseMs, 100));
    }
  });
  return load;
}

/** Waits (bounded) until `done` holds, polling. */
export async function waitFor(what: string, done: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  await until(done, { what, timeoutMs, everyMs: 300 });
}

interface StoredCall {
  id: string;
  started_at: string;
  ended_at: string | null;
}

export async function storedCalls(url: string, project: string): Promise<StoredCall[]> {
  return client(url).lines<StoredCall>("/calls/stream_query", { project_id: project, columns: ["id", "started_at", "ended_at"] });
}

/** What /threads/stream_query answers for a thread, figures over its turns. */
type ThreadFigures = Pick<ThreadSchema, "thread_id" | "turn_count" | "first_turn_id" | "last_turn_id" | "p50_turn_duration_ms" | "p99_turn_duration_ms">;

/**
 * Each thread's figures as its stored turns say (every call of a load is a turn of
 * `threadOf`), by the definitions of the threads' figures (docs/resources.md): first turn the earliest started,
 * last turn the latest ended (the latest started while none ended), percentiles over the
 * ended turns' durations in ms, the element at floor(q × n) of them sorted.
 */
function threadFiguresOf(calls: readonly StoredCall[], threadOf: (id: string) => string): ThreadFigures[] {
  type Turn = { id: string; start: number; end: number | null };
  const byThread = new Map<string, Turn[]>();
  for (const c of calls) {
    const turns = byThread.get(threadOf(c.id)) ?? [];
    turns.push({ id: c.id, start: isoToMicros(c.started_at)!, end: c.ended_at === null ? null : isoToMicros(c.ended_at)! });
    byThread.set(threadOf(c.id), turns);
  }
  // Ties go to the smallest id for the first turn, the largest for the last.
  const latestBy = (turns: Turn[], time: (t: Turn) => number) => turns.reduce((a, b) => (time(b) > time(a) || (time(b) === time(a) && b.id > a.id) ? b : a));
  const earliest = (turns: Turn[]) => turns.reduce((a, b) => (b.start < a.start || (b.start === a.start && b.id < a.id) ? b : a));
  return [...byThread].map(([thread_id, turns]) => {
    const ended = turns.filter((t) => t.end !== null);
    const durations = ended.map((t) => (t.end! - t.start) / 1000).sort((a, b) => a - b);
    const at = (q: number) => (durations.length === 0 ? null : durations[Math.floor(q * durations.length)]!);
    return {
      thread_id,
      turn_count: turns.length,
      first_turn_id: earliest(turns).id,
      last_turn_id: ended.length > 0 ? latestBy(ended, (t) => t.end!).id : latestBy(turns, (t) => t.start).id,
      p50_turn_duration_ms: at(0.5),
      p99_turn_duration_ms: at(0.99),
    };
  }).sort((a, b) => a.thread_id.localeCompare(b.thread_id));
}


export async function storedCount(url: string, project: string): Promise<number> {
  return (await storedCalls(url, project)).length;
}

/**
 * Waits until every acknowledged call is stored and finished, then checks: each call once,
 * none that was never sent; each thread's figures (turn count, first and last turn, p50 and
 * p99 of the turns' durations) are what its stored turns say; the usage summed over all calls
 * counts each stored call once.
 */
export async function expectExactlyOnce(url: string, project: string, load: Load): Promise<void> {
  expect(load.acked.length).toBeGreaterThan(0);
  let calls: StoredCall[] = [];
  let waiting: string[] = [];
  await waitFor("every acknowledged call to be stored", async () => {
    calls = await storedCalls(url, project);
    const finished = new Set(calls.filter((c) => c.ended_at !== null).map((c) => c.id));
    waiting = load.acked.filter((id) => !finished.has(id));
    return waiting.length === 0;
  }, 150_000).catch((err: Error) => {
    const stored = new Set(calls.map((c) => c.id));
    const missing = waiting.filter((id) => !stored.has(id));
    throw new Error(`${err.message}: ${load.acked.length} acknowledged, ${calls.length} stored, ${missing.length} missing (e.g. ${missing.slice(0, 3).join(", ")}), ${waiting.length - missing.length} unfinished (e.g. ${waiting.filter((id) => stored.has(id)).slice(0, 3).join(", ")})`);
  });
  const ids = calls.map((c) => c.id);
  const seen = new Set(ids);
  expect(ids.length).toBe(seen.size);
  expect(load.acked.filter((id) => !seen.has(id))).toEqual([]);
  const sent = new Set([...load.acked, ...load.uncertain]);
  expect(ids.filter((id) => !sent.has(id))).toEqual([]);

  const expectedThreads = threadFiguresOf(calls, load.threadOf);
  const threadFigures = async () => {
    const threads = await client(url).lines<ThreadSchema>("/threads/stream_query", { project_id: project });
    return threads
      .map(({ thread_id, turn_count, first_turn_id, last_turn_id, p50_turn_duration_ms, p99_turn_duration_ms }) => ({ thread_id, turn_count, first_turn_id, last_turn_id, p50_turn_duration_ms, p99_turn_duration_ms }))
      .sort((a, b) => a.thread_id.localeCompare(b.thread_id));
  };
  // The thread aggregates are written in the same batches as the calls: equal once the calls are.
  let threads: ThreadFigures[] = [];
  await waitFor("the thread aggregates", async () => {
    threads = await threadFigures();
    return JSON.stringify(threads) === JSON.stringify(expectedThreads);
  }, 30_000).catch(() => undefined);
  expect(threads).toEqual(expectedThreads);

  const usageSum = async () => {
    const usage = await client(url).json<{ call_usage: Record<string, Record<string, typeof USAGE>> }>("/trace/usage", {
      project_id: project,
      filter: { trace_roots_only: true },
      limit: 100_000,
    });
    const sum = { calls: 0, requests: 0, total_tokens: 0 };
    for (const perModel of Object.values(usage.call_usage)) {
      sum.calls += 1;
      sum.requests += perModel.m?.requests ?? 0;
      sum.total_tokens += perModel.m?.total_tokens ?? 0;
    }
    return sum;
  };
  // As the thread aggregates: on a cluster just back from an outage, a read may go to the replica
  // still fetching (the one with fewer recent connection errors), so equal once replicas agree.
  const expectedUsage = { calls: ids.length, requests: ids.length, total_tokens: USAGE.total_tokens * ids.length };
  let sum = await usageSum();
  await waitFor("the usage sums", async () => JSON.stringify((sum = await usageSum())) === JSON.stringify(expectedUsage), 60_000).catch(() => undefined);
  expect(sum).toEqual(expectedUsage);
}

/** Resident set size of a process in bytes, from /proc/<pid>/status. */
export function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) * 1024 : 0;
}

/** Samples a process's RSS every `everyMs` until stopped; answers the samples. */
export function sampleRss(pid: number, everyMs = 200): { stop(): number[] } {
  const samples: number[] = [];
  const timer = setInterval(() => {
    try {
      samples.push(rssBytes(pid));
    } catch {
      // the process is gone
    }
  }, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      return samples;
    },
  };
}

/** One gauge's value (summed over its labels) from a Prometheus text page. */
export async function gauge(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

/**
 * A TCP proxy on loopback in front of `target` that can stall: while stalled it neither
 * forwards a byte nor connects new clients (they wait, connected to the proxy), as a
 * ClickHouse whose HTTP interface stopped answering; `flow()` lets everything through again.
 */
export class StallingProxy {
  private stalled = false;
  private readonly sockets = new Set<Socket>();
  private readonly held: Socket[] = [];

  private constructor(private readonly server: Server, private readonly target: { host: string; port: number }, readonly port: number) {}

  static async start(target: { host: string; port: number }): Promise<StallingProxy> {
    const port = await freePort();
    let proxy: StallingProxy | null = null;
    const server = createServer((socket) => proxy!.accept(socket));
    await new Promise<void>((done) => server.listen(port, "127.0.0.1", done));
    proxy = new StallingProxy(server, target, port);
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  stall(): void {
    this.stalled = true;
    for (const s of this.sockets) s.pause();
  }

  flow(): void {
    this.stalled = false;
    for (const s of this.sockets) s.resume();
    for (const s of this.held.splice(0)) this.accept(s);
  }

  async close(): Promise<void> {
    for (const s of [...this.sockets, ...this.held]) s.destroy();
    await new Promise<void>((done) => this.server.close(() => done()));
  }

  private accept(downstream: Socket): void {
    if (this.stalled) {
      downstream.pause();
      this.held.push(downstream);
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    for (const [from, to] of [[downstream, upstream], [upstream, downstream]] as const) {
      this.sockets.add(from);
      from.on("data", (chunk) => {
        if (!to.write(chunk)) from.pause();
      });
      to.on("drain", () => {
        if (!this.stalled) from.resume();
      });
      from.on("close", () => {
        this.sockets.delete(from);
        to.destroy();
      });
      from.on("error", () => to.destroy());
    }
    // A socket held while stalled was paused explicitly, and stays paused when a 'data'
    // listener is added: its request would wait for the client's own timeout.
    downstream.resume();
  }
}
