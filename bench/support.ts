import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { constants as osConstants, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import pino, { type Logger } from "pino";
import { loadConfig } from "../services/config.js";
import { freePorts, LOG_QUERIES, startLocalClickHouse, type LocalClickHouse } from "../services/store/localServer.js";
import { quoteString } from "../services/store/sql.js";
import { makeStartFlags, makeStartNode } from "../scripts/startFlags.js";

/** Shared pieces of the benchmarks: a service process, timing statistics, printing. */
export const BENCH_KEY = "bench-key-0123456789abcdef";
export const BENCH_AUTH = `Basic ${Buffer.from(`api:${BENCH_KEY}`).toString("base64")}`;

export interface ServiceProcess {
  readonly url: string;
  /** The service's OTLP over gRPC (`http://127.0.0.1:<OTLP_GRPC_PORT>`, a free port of its own); absent for other servers. */
  readonly otlpGrpcUrl?: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** BENCH_PROCESSES: the service's PROCESSES (1 by default, as `make start`). */
export const BENCH_PROCESSES = Number(process.env.BENCH_PROCESSES ?? 1);

let compiled = false;

/**
 * The service compiled as `make start` runs it (built once per bench run, when its sources
 * changed); BENCH_SERVICE_ENTRY: another compiled service (e.g. a copy of build/ made at an
 * earlier commit), compared in the same conditions.
 */
export function compiledService(): string {
  if (process.env.BENCH_SERVICE_ENTRY) return process.env.BENCH_SERVICE_ENTRY;
  if (!compiled) {
    const build = spawnSync("bash", ["scripts/build-service.sh"], { stdio: "inherit" });
    if (build.status !== 0) throw new Error("scripts/build-service.sh failed");
    compiled = true;
  }
  return "build/services/main.js";
}

/**
 * For a service a bench runs in its own process (startService): pino at the shipped default
 * level, buffered like the process log, into a file (the bench's stdout is its report).
 */
export function inProcessServiceLog(): Logger {
  const dir = mkdtempSync(join(tmpdir(), "bench-service-log-"));
  return pino({ level: loadConfig({}).LOG_LEVEL }, pino.destination({ dest: join(dir, "service.log"), sync: false, minLength: 8192 }));
}

/** BENCH_CPU_PROF=<dir>: node's flags that write a V8 CPU profile there when the process stops. */
export const cpuProfileFlags = (): string[] => (process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []);

/** A service's heap samples (BENCH_HEAP_SAMPLES: bench/heapSampler.mjs in each of its threads): its flags, its environment, and the report. */
interface HeapSampling {
  readonly flags: string[];
  readonly env: Record<string, string>;
  /** Prints each thread's V8 heap and external memory at its process's highest sampled RSS, and each one's own peak; then drops the samples. */
  report(): void;
}

function heapSampling(): HeapSampling | null {
  if (!process.env.BENCH_HEAP_SAMPLES) return null;
  const dir = mkdtempSync(join(tmpdir(), "bench-heap-samples-"));
  return {
    flags: [`--import=${join(import.meta.dirname, "heapSampler.mjs")}`],
    env: { BENCH_HEAP_SAMPLES_DIR: dir },
    report: () => {
      printTable("V8 heaps by thread at their process's highest sampled RSS, over the service's whole run (BENCH_HEAP_SAMPLES, 50 ms samples)", heapRows(dir));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One sample: ms since the epoch, the thread's V8 heap and external memory (MB), the process's RSS (MB, the main thread's only). */
type HeapSample = readonly [at: number, heap: number, external: number, rss: number];

/** Rows by process and thread (files `<pid>-<threadId>-<entry>.samples`), each at its process's highest sampled RSS. */
function heapRows(dir: string): Record<string, string | number>[] {
  const threads = readdirSync(dir)
    .map((name) => {
      const [pid, threadId] = name.split("-", 2).map(Number) as [number, number];
      const samples = readFileSync(join(dir, name), "utf8").trim().split("\n").map((line) => line.split(" ").map(Number) as unknown as HeapSample);
      return { pid, threadId, thread: name.replace(/^\d+-/, "").replace(/\.samples$/, ""), samples };
    })
    .sort((a, b) => a.pid - b.pid || a.threadId - b.threadId);
  // Each process's highest RSS sample, from its main thread (the only one that samples RSS).
  const peaks = new Map(threads.filter((t) => t.threadId === 0).map((t) => [t.pid, t.samples.reduce((best, s) => (s[3] > best[3] ? s : best))]));
  return threads.map(({ pid, threadId, thread, samples }) => {
    const peak = peaks.get(pid) ?? samples[samples.length - 1]!;
    const atPeak = samples.reduce((best, s) => (Math.abs(s[0] - peak[0]) < Math.abs(best[0] - peak[0]) ? s : best));
    return {
      process: pid,
      thread,
      "heap MB at the peak": atPeak[1],
      "external MB at the peak": atPeak[2],
      "own peak heap MB": Math.max(...samples.map((s) => s[1])),
      "own peak external MB": Math.max(...samples.map((s) => s[2])),
      "process RSS MB at the peak": threadId === 0 ? peak[3] : "",
    };
  });
}

/** A trivial server in a process of its own: reads the body, answers 200 `{}` (what any Node HTTP service costs at least). */
const REFERENCE_SERVER = `
const http = require("node:http");
const server = http.createServer((req, res) => {
  req.on("data", () => {});
  req.on("end", () => { res.writeHead(200, { "content-type": "application/json", "content-length": "2" }); res.end("{}"); });
});
server.keepAliveTimeout = 65000;
server.listen(Number(process.env.PORT), "127.0.0.1", () => process.send("listening"));
`;

export async function startReferenceServer(): Promise<ServiceProcess> {
  const port = (await freePorts(1))[0]!;
  const child = spawn(process.execPath, ["-e", REFERENCE_SERVER], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "inherit", "ipc"] });
  await new Promise<void>((resolve, reject) => {
    child.once("message", () => resolve());
    child.once("exit", (code) => reject(new Error(`reference server ended (${code})`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: () => new Promise<void>((done) => (child.once("exit", () => done()), child.kill("SIGTERM"))),
  };
}

/**
 * Runs autocannon for a couple of seconds against a trivial server, so that a latency measured
 * next is the service's and not that of the load generator's own first, unoptimized seconds.
 */
export async function warmLoadGenerator(): Promise<void> {
  const reference = await startReferenceServer();
  try {
    await autocannon({ url: reference.url, method: "POST", connections: 64, overallRate: 500, duration: 2, body: "{}" });
  } finally {
    await reference.stop();
  }
}

/** Services this process started and that still run, with their log's folder: killed and removed when it exits, so that a bench that throws leaves none behind. */
const runningServices = new Map<ChildProcess, string>();
process.once("exit", () => {
  for (const [child, logDir] of runningServices) {
    child.kill("SIGKILL");
    rmSync(logDir, { recursive: true, force: true });
  }
});

// A signal would end the process without its "exit" handlers (the services above, the
// ClickHouse servers and mounts of `startBenchClickHouse`): exit instead, so that they run.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, () => process.exit(128 + osConstants.signals[signal]));

/**
 * The service as its own process, as `make start` runs it (its node, its defaults, `LOG_LEVEL` too),
 * with PROCESSES=BENCH_PROCESSES. BENCH_CPU_PROF=<dir>: it writes a V8 CPU profile there
 * when it stops. BENCH_HEAP_SAMPLES=1: its threads' heaps printed at its peak RSS when it stops.
 */
export async function spawnService(env: Record<string, string>): Promise<ServiceProcess> {
  const [port, grpcPort] = (await freePorts(2)) as [number, number];
  // Its log at the shipped level, into a file as a log collector would take it (not /dev/null).
  const logDir = mkdtempSync(join(tmpdir(), "bench-service-log-"));
  const logFile = openSync(join(logDir, "stdout.log"), "w");
  const profile = cpuProfileFlags();
  const heaps = heapSampling();
  // As `make start` runs it; BENCH_NODE_FLAGS: extra flags for the service's node (experiments: a later flag wins).
  const root = join(import.meta.dirname, "..");
  const flags = [...makeStartFlags(root), ...(heaps?.flags ?? []), ...(process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean)];
  const entry = process.env.BENCH_SERVICE_TSX ? ["--import", "tsx", "services/main.ts"] : [compiledService()];
  // As `make start`'s node; BENCH_SERVICE_NODE: another one (comparisons between Node.js versions).
  const node = process.env.BENCH_SERVICE_NODE ?? makeStartNode(root);
  const child: ChildProcess = spawn(node, [...profile, ...flags, ...entry], {
    env: {
      ...process.env,
      PORT: String(port),
      OTLP_GRPC_PORT: String(grpcPort),
      HOST: "127.0.0.1",
      AUTH_KEYS: JSON.stringify([{ key: BENCH_KEY, username: "bench", entities: ["*"] }]),
      // As `make start` and the image run it.
      MALLOC_ARENA_MAX: "2",
      PROCESSES: String(BENCH_PROCESSES),
      ...heaps?.env,
      ...env,
    },
    stdio: ["ignore", logFile, "inherit"],
  });
  runningServices.set(child, logDir);
  child.once("exit", () => runningServices.delete(child));
  closeSync(logFile);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // starting
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error("service did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    otlpGrpcUrl: `http://127.0.0.1:${grpcPort}`,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((done) => {
        child.once("exit", () => {
          rmSync(logDir, { recursive: true, force: true });
          heaps?.report();
          done();
        });
        child.kill("SIGTERM");
      }),
  };
}

function ownRssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0; // gone
  }
}

/**
 * Samples the resident memory of a service (its process and, for a cluster, its children,
 * listed once at the start rather than by scanning /proc at every sample) every 100 ms;
 * `stop` answers the peak, in MB.
 */
export interface PostAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * The load generators' POST, over at most `connections` kept-alive connections: node:http
 * costs the bench process less CPU per request than fetch, so more of the two cores is left
 * to what is measured.
 */
export function keptAlivePoster(baseUrl: string, connections: number): (path: string, headers: Record<string, string>, body: Uint8Array) => Promise<PostAnswer> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  return (path, headers, body) =>
    new Promise((resolve, reject) => {
      const req = request(`${baseUrl}${path}`, { method: "POST", agent, headers: { ...headers, "content-length": String(body.length) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
}

/**
 * POSTs until answered other than 429 or 503, waiting the answer's `Retry-After` (seconds; 1
 * when absent) before each retry, as the OpenTelemetry exporters and the SDKs do: the final
 * answer and how many refusals came before it.
 */
async function postRetrying(
  post: ReturnType<typeof keptAlivePoster>,
  path: string,
  headers: Record<string, string>,
  body: Uint8Array,
): Promise<{ answer: PostAnswer; retries: number }> {
  for (let retries = 0; ; retries++) {
    const answer = await post(path, headers, body);
    if (answer.status !== 429 && answer.status !== 503) return { answer, retries };
    const seconds = Number(answer.headers["retry-after"] ?? 1);
    await new Promise((r) => setTimeout(r, (Number.isFinite(seconds) ? seconds : 1) * 1000));
  }
}

/**
 * Sends every body to `path` from `senders` concurrent senders, each refusal retried as
 * `postRetrying` does; every answer must be 2xx, and pass `check` when given. Resolves with
 * the refusals once every body was accepted.
 */
export async function sendAllRetrying({ post, path, headers, bodies, senders, check }: {
  post: ReturnType<typeof keptAlivePoster>;
  path: string;
  headers: Record<string, string>;
  bodies: readonly Uint8Array[];
  senders: number;
  check?: (answer: PostAnswer) => void;
}): Promise<number> {
  let next = 0;
  let refusals = 0;
  await Promise.all(
    Array.from({ length: senders }, async () => {
      while (next < bodies.length) {
        const { answer, retries } = await postRetrying(post, path, headers, bodies[next++]!);
        refusals += retries;
        if (answer.status < 200 || answer.status > 299) throw new Error(`${path} answered ${answer.status}: ${answer.body.toString()}`);
        check?.(answer);
      }
    }),
  );
  return refusals;
}

/**
 * The project's calls as `/calls/query_stats` counts them (`authorization`: the bench key
 * unless given); 0 while the service refuses for now (429, 503).
 */
export async function countCalls(url: string, project: string, authorization = BENCH_AUTH): Promise<number> {
  const res = await fetch(`${url}/calls/query_stats`, { method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify({ project_id: project }) });
  if (res.status === 429 || res.status === 503) return 0;
  if (!res.ok) throw new Error(`/calls/query_stats answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { count: number }).count;
}

export function sampleServiceRss(pid: number): { stop(): number } {
  const pids = [pid, ...children(pid).map((c) => c.pid)];
  const now = () => pids.reduce((mb, p) => mb + ownRssMb(p), 0);
  let peak = now();
  const timer = setInterval(() => (peak = Math.max(peak, now())), 100);
  return {
    stop: () => {
      clearInterval(timer);
      return peak;
    },
  };
}

export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export function stats(samples: readonly number[]): { p50: number; p99: number; mean: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), mean: sorted.reduce((a, b) => a + b, 0) / sorted.length };
}

export async function timeIt(runs: number, fn: () => Promise<unknown>): Promise<number[]> {
  await fn();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

/** How `clickhouseClient` runs: in `database`, with `flags` before the query, its input from or its output to a file. */
export interface ClientRun {
  readonly database?: string;
  readonly flags?: readonly string[];
  readonly inputFile?: string;
  readonly outputFile?: string;
}

/** Runs `sql` through clickhouse-client on the server's TCP port: its output and its stderr (the `--time`); fails with the stderr. */
export function clickhouseClient(ch: Pick<LocalClickHouse, "tcpPort">, sql: string, run: ClientRun = {}): { stdout: string; stderr: string } {
  const input = run.inputFile === undefined ? "ignore" : openSync(run.inputFile, "r");
  const output = run.outputFile === undefined ? "pipe" : openSync(run.outputFile, "w");
  try {
    const database = run.database === undefined ? [] : ["--database", run.database];
    const r = spawnSync("clickhouse-client", ["--port", String(ch.tcpPort), ...database, ...(run.flags ?? []), "-q", sql], { encoding: "utf8", stdio: [input, output, "pipe"] });
    if (r.status !== 0) throw new Error(`clickhouse-client failed: ${r.stderr}`);
    return { stdout: r.stdout ?? "", stderr: r.stderr };
  } finally {
    if (typeof input === "number") closeSync(input);
    if (typeof output === "number") closeSync(output);
  }
}

/** Runs a query through clickhouse-client and returns the server-reported elapsed ms. */
export function clickhouseClientMs(tcpPort: number, database: string, sql: string, runs: number): number[] {
  const out: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const { stderr } = clickhouseClient({ tcpPort }, sql, { database, flags: ["--time", "--format", "Null"] });
    if (i > 0) out.push(Number(stderr.trim().split("\n").pop()) * 1000);
  }
  return out;
}

export function printTable(title: string, rows: Record<string, string | number>[]): void {
  console.log(`\n## ${title}`);
  if (rows.length === 0) return;
  const keys = Object.keys(rows[0]!);
  const fmt = (v: string | number) => (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(1)) : v);
  const widths = keys.map((k) => Math.max(k.length, ...rows.map((r) => fmt(r[k] ?? "").length)));
  console.log(keys.map((k, i) => k.padEnd(widths[i]!)).join("  "));
  for (const r of rows) console.log(keys.map((k, i) => fmt(r[k] ?? "").padEnd(widths[i]!)).join("  "));
}

/** Where `clickhouseClientInsertRate` inserts: an empty table made by `create`, and the client's settings. */
export interface InsertCopy {
  readonly table: string;
  /** Statements that make it, run after `DROP TABLE IF EXISTS <table>`. */
  readonly create: readonly string[];
  /** clickhouse-client settings of the insert, e.g. `--insert_distributed_sync=1`. */
  readonly settings?: readonly string[];
}

type Client = (sql: string, run?: Omit<ClientRun, "database">) => unknown;

/** Makes `copy` afresh and times `clickhouse-client` inserting `file` into it in one statement: seconds. */
function timedInsert(client: Client, copy: InsertCopy, file: string, format: string): number {
  client(`DROP TABLE IF EXISTS ${copy.table}`);
  for (const statement of copy.create) client(statement);
  const t = performance.now();
  client(`INSERT INTO ${copy.table} FORMAT ${format}`, { flags: copy.settings, inputFile: file });
  return (performance.now() - t) / 1000;
}

const STANDARD_ROWS = 200_000;
/**
 * Inserts of the raw reference per bench run, its median the reference: single inserts (each
 * under a second) seconds apart differ by up to a third on these machines (docs/benchmarks.md).
 */
const STANDARD_RUNS = 3;

/** The raw reference of a run: the median of its inserts' rows per second, and each insert's. */
export interface StandardRate {
  readonly rowsPerSecond: number;
  readonly runs: readonly number[];
}

/** The raw reference's columns of a bench's table: the median, and each insert's rate. */
export const standardColumns = (reference: StandardRate): Record<string, string | number> => ({
  "raw reference rows/s": reference.rowsPerSecond,
  "raw reference runs": reference.runs.map((rate) => Math.round(rate).toLocaleString("en")).join("/"),
});

/**
 * The raw reference ingest rates are set against: `clickhouse-client` inserting 200,000
 * small call-part rows (12 columns, about 360 bytes of JSONEachRow each:
 * random UUIDs, a trace of one to four calls, an op name, two timestamps, short inputs and
 * output) in one statement into a scratch MergeTree table of the same server, STANDARD_RUNS
 * times. It measures the machine and the server of the run, whatever our schema, so that a
 * rate divided by it compares across machines and days.
 */
export function standardInsertRate(ch: Pick<LocalClickHouse, "tcpPort">): StandardRate {
  const dir = mkdtempSync(join(tmpdir(), "bench-standard-"));
  const file = join(dir, "rows.json");
  const database = "bench_reference";
  const client = (sql: string, run: Omit<ClientRun, "database"> = {}) => clickhouseClient(ch, sql, run);
  try {
    const lines: string[] = [];
    let trace = randomUUID();
    for (let i = 0; i < STANDARD_ROWS; i++) {
      if (i % (1 + (i % 4)) === 0) trace = randomUUID();
      const at = Date.UTC(2026, 10, 28) * 1000 + i * 137;
      lines.push(JSON.stringify({
        project_id: "bench/ref", id: randomUUID(), trace_id: trace, parent_id: "", op_name: "weave:///bench/ref/op/f:v1",
        started_at: at, ended_at: at + 1_500_000, status: "ok",
        inputs: JSON.stringify({ q: `${i}` }), output: JSON.stringify({ a: `${i}` }),
        attributes: JSON.stringify({ env: "prod" }), wb_user_id: "bench",
      }));
    }
    writeFileSync(file, `${lines.join("\n")}\n`);
    client(`CREATE DATABASE IF NOT EXISTS ${database}`);
    const copy = {
      table: `${database}.call_parts`,
      create: [`CREATE TABLE ${database}.call_parts (project_id String, id String, trace_id String, parent_id String, op_name String,
        started_at UInt64, ended_at UInt64, status String, inputs String, output String, attributes String, wb_user_id String)
        ENGINE = MergeTree ORDER BY (project_id, id)`],
    };
    const runs = Array.from({ length: STANDARD_RUNS }, () => STANDARD_ROWS / timedInsert(client, copy, file, "JSONEachRow"));
    client(`DROP DATABASE ${database}`);
    return { rowsPerSecond: stats(runs).p50, runs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The reference for ingest figures: dumps the stored `calls` rows of one project to a
 * RowBinary file (the service's insert format), then times `clickhouse-client` inserting
 * that file into an empty copy of the table in one statement. Returns rows per second.
 */
export function clickhouseClientInsertRate(
  ch: Pick<LocalClickHouse, "tcpPort">,
  database: string,
  project: string,
  copy: InsertCopy = { table: "calls_copy", create: ["CREATE TABLE calls_copy AS calls"] },
): number {
  const dir = mkdtempSync(join(tmpdir(), "bench-rows-"));
  const file = join(dir, "rows.bin");
  const client = (sql: string, run: Omit<ClientRun, "database"> = {}) => clickhouseClient(ch, sql, { database, ...run }).stdout;
  try {
    // Straight to a file: the dump can exceed what one string or buffer holds.
    client(`SELECT * FROM calls WHERE project_id = ${quoteString(project)} FORMAT RowBinary`, { outputFile: file });
    const rows = Number(client(`SELECT count() FROM calls WHERE project_id = ${quoteString(project)}`).trim());
    return rows / timedInsert(client, copy, file, "RowBinary");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * With CLICKHOUSE_LOG_QUERIES=1 (the private server keeps its query and part logs): what
 * ClickHouse did for the work so far in `database`, per unit. Its CPU per kind of query (the
 * query_id's prefix names the code path; an insert's materialized views are in it), and its
 * merges per table: rows rewritten per unit and their wall time (part_log has no CPU; a merge
 * of `calls` costs about what an insert of as many rows does). Every query of the server
 * counts (18.16's query_log names no database): run it before the clickhouse-client reference.
 */
export function printClickHouseWork(ch: Pick<LocalClickHouse, "tcpPort">, database: string, units: number, unit: string, server = "ClickHouse"): void {
  if (!LOG_QUERIES) return;
  const client = (sql: string) => clickhouseClient(ch, sql).stdout;
  client("SYSTEM FLUSH LOGS");
  const rows = (sql: string) => client(`${sql} FORMAT TSV`).trim().split("\n").filter(Boolean).map((line) => line.split("\t"));
  const event = (name: string) => `ProfileEvents.Values[indexOf(ProfileEvents.Names, '${name}')]`;
  const cpu = event("OSCPUVirtualTimeMicroseconds");
  // A query sent without an id of ours (another node's part of a distributed query, a tool's) is named by its text's start.
  const kind = `if(match(query_id, '^[0-9a-f]{8}-[0-9a-f]{4}-'), concat(if(is_initial_query, '', 'from another node: '), replaceRegexpAll(substring(query, 1, 90), '[0-9]+', 'N')), replaceRegexpOne(query_id, '-[0-9a-f]{8}-[0-9a-f-]+$', ''))`;
  // An insert's parts ClickHouse found already in sort key order (written without sorting: store/calls/callsWrite.ts).
  const queries = rows(`SELECT ${kind} AS kind, count(), sum(${cpu}), sum(written_rows), sum(read_rows),
      sum(${event("MergeTreeDataWriterBlocksAlreadySorted")}), sum(${event("MergeTreeDataWriterBlocks")})
    FROM system.query_log WHERE type = 2 GROUP BY kind ORDER BY sum(${cpu}) DESC LIMIT 12`);
  printTable(`${server}: CPU per ${unit} by query (query_log, the biggest 12)`, queries.map(([kind, count, micros, written, read, sorted, parts]) => ({
    query: kind ?? "", queries: Number(count), [`CPU µs per ${unit}`]: Number(micros) / units, [`rows written per ${unit}`]: Number(written) / units, [`rows read per ${unit}`]: Number(read) / units,
    "parts written sorted": Number(parts) > 0 ? `${sorted} of ${parts}` : "",
  })));
  const merges = rows(`SELECT table, count(), sum(rows), sum(duration_ms) FROM system.part_log
    WHERE event_type = 'MERGE_PARTS' AND database = ${quoteString(database)} GROUP BY table ORDER BY sum(rows) DESC`);
  printTable(`${server}: background merges (part_log)`, merges.map(([table, count, merged, ms]) => ({
    table: table ?? "", merges: Number(count), [`rows merged per ${unit}`]: Number(merged) / units, "wall s": Number(ms) / 1000,
  })));
}

/** CPU seconds used so far by a process (user + system), from /proc; `pid` may name a thread, `<pid>/task/<tid>`. */
export function cpuSeconds(pid: number | "self" | `${number}/task/${string}`): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds used by the whole machine so far (all cores, busy time only). */
function machineBusySeconds(): number {
  const [, ...numbers] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = numbers.map(Number) as number[];
  return (user! + nice! + system! + irq! + softirq! + steal!) / 100;
}

/** The live children of a process, with their command names. */
export function children(parent: number): { pid: number; comm: string }[] {
  const found: { pid: number; comm: string }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === parent) found.push({ pid: Number(entry), comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) });
    } catch {
      // gone
    }
  }
  return found;
}

/** Processes started by this one whose command name starts with `name` (e.g. the local clickhouse-server). */
export function childPids(name: string): number[] {
  return children(process.pid).filter((c) => c.comm.startsWith(name)).map((c) => c.pid);
}

export interface CpuUse {
  readonly service: number;
  readonly bench: number;
  readonly clickhouse: number;
  readonly machine: number;
}

/** CPU seconds spent by the service, this process, ClickHouse and the machine since construction. */
export class CpuMeter {
  private readonly start: CpuUse;

  constructor(private readonly servicePid: number, private readonly clickhousePid: number | null) {
    this.start = this.now();
  }

  read(): CpuUse {
    const now = this.now();
    return {
      service: now.service - this.start.service,
      bench: now.bench - this.start.bench,
      clickhouse: now.clickhouse - this.start.clickhouse,
      machine: now.machine - this.start.machine,
    };
  }

  private now(): CpuUse {
    // The service may be several processes (a cluster): count its children too.
    return {
      service: children(this.servicePid).reduce((n, c) => n + cpuSeconds(c.pid), cpuSeconds(this.servicePid)),
      bench: cpuSeconds("self"),
      clickhouse: this.clickhousePid === null ? NaN : cpuSeconds(this.clickhousePid),
      machine: machineBusySeconds(),
    };
  }
}

/** Prints where the CPU went: per process, cores busy and CPU µs per unit of work. */
export function printCpuTable(cpu: CpuUse, wallSeconds: number, units: number, unit: string): void {
  const other = cpu.machine - cpu.service - cpu.bench - cpu.clickhouse;
  const row = (process: string, seconds: number) => ({ process, "CPU s": seconds, "cores busy": seconds / wallSeconds, [`CPU µs per ${unit}`]: (seconds * 1e6) / units });
  printTable(`Where the CPU went (${wallSeconds.toFixed(1)} s wall, ${cpus().length} cores)`, [
    row("service", cpu.service),
    row("clickhouse-server", cpu.clickhouse),
    row("bench client", cpu.bench),
    row("other processes on the machine", other),
  ]);
}

/** A private ClickHouse for one benchmark, and where its data lives. */
export interface BenchClickHouse {
  readonly ch: LocalClickHouse;
  /** Scratch directory (service DATA_DIR, dumps). */
  readonly dir: string;
  /** The filesystem under ClickHouse's data, as printed with the figures. */
  readonly filesystem: string;
  stop(): Promise<void>;
}

const IMAGE_BYTES = 16 * 1024 ** 3;

/**
 * Starts ClickHouse with its data on a journaled ext4 filesystem (a sparse image on a
 * loop device) when this process may mount one, else in a temporary directory.
 *
 * Why: these VMs' root filesystem is ext4 without a journal, where every file creation
 * scans the inode table for recently deleted inodes (`recently_deleted` in the kernel's
 * ext4 inode allocator, seen with perf). ClickHouse creates ~75 files per insert into
 * `calls`, so each insert costs ~46 ms of CPU there against ~6 ms on any journaled
 * filesystem (measured: 30 inserts of 10 rows). Production disks are journaled (ext4, XFS).
 * BENCH_ROOT_FS=1 keeps the data on the root filesystem to show that cost.
 */
export async function startBenchClickHouse(name: string): Promise<BenchClickHouse> {
  const dir = mkdtempSync(join(tmpdir(), `bench-${name}-`));
  const mount = process.env.BENCH_ROOT_FS ? null : mountJournaledImage(dir);
  const dataDir = mount ?? dir;
  const ch = await startLocalClickHouse(dataDir);
  // Also when the process exits first (a throw, a signal): the server is sent SIGTERM by its own
  // "exit" handler, registered before this one; a lazy unmount lets go once its files close.
  const release = () => {
    if (mount) spawnSync("umount", ["-l", mount]);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", release);
  return {
    ch,
    dir,
    filesystem: mount ? "journaled ext4 on a loop device" : `${filesystemOf(dir)} under ${tmpdir()} (root filesystem)`,
    stop: async () => {
      await ch.stop();
      process.removeListener("exit", release);
      release();
    },
  };
}

function mountJournaledImage(dir: string): string | null {
  const image = join(dir, "fs.img");
  const mountPoint = join(dir, "mnt");
  const run = (command: string, args: string[]) => spawnSync(command, args, { encoding: "utf8" }).status === 0;
  if (!run("truncate", ["-s", String(IMAGE_BYTES), image])) return null;
  if (!run("mkfs.ext4", ["-q", "-F", image]) || !run("mkdir", ["-p", mountPoint]) || !run("mount", ["-o", "loop", image, mountPoint])) {
    console.log("(could not mount a journaled image: ClickHouse data stays on the root filesystem)");
    return null;
  }
  return mountPoint;
}

function filesystemOf(path: string): string {
  return spawnSync("stat", ["-f", "-c", "%T", path], { encoding: "utf8" }).stdout.trim() || "unknown";
}
