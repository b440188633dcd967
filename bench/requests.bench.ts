/**
 * Single requests (issue 28: clients that send one call per request). Prints:
 * - throughput of single `/call/start` requests (autocannon, 32 connections, closed loop),
 *   beside the same autocannon against a trivial Node HTTP server answering 200 in its own
 *   process (the machine's own speed, measured in the same run), with the CPU µs per request
 *   of each server;
 * - `/call/start` at a steady 500 requests/s (BENCH_STEADY_RATE sets another rate): p50/p99 of
 *   the acknowledgement and the count of answers other than 2xx;
 * - the same while RL jobs run back to back in the service (issue 28: nothing blocks the
 *   request thread): lm.bench's RL step (32 trajectories sampled from the base model in this
 *   process, bench/trainingApi.ts) submitted through the training API, the next when one
 *   ends, after one job outside the window (the service's first starts its model thread);
 * - acknowledged → readable on an idle service: a call written as one `upsert_batch` of its
 *   start and end, then `/call/read` at once and every 10 ms until it shows the call ended;
 *   the time from the acknowledgement to that answer, p50/p99;
 * - the same while the OTLP bench's load runs (400 exports of 512 spans, protobuf and gzip,
 *   from 8 exporters, each refusal retried after its Retry-After): calls written and read back
 *   one after the other until it was accepted; p50/p99 and the exports refused.
 * BENCH_SECTIONS=throughput,latency,latency-rl,readable,readable-otlp (the default) picks the parts;
 * BENCH_SINGLE_SECONDS sets the length of the throughput runs (10 s).
 */
import { gzipSync } from "node:zlib";
import autocannon from "autocannon";
import { iso, T0 } from "./callBodies.js";
import { protobufRequest, requestSpans } from "./otlpSpans.js";
import { BENCH_AUTH, CpuMeter, keptAlivePoster, printTable, sendAllRetrying, spawnService, startBenchClickHouse, startReferenceServer, stats, type ServiceProcess } from "./support.js";
import { benchBaseModel, createModel, rlJob, sampleTrajectories, trainingApi } from "./trainingApi.js";

const SECTIONS = (process.env.BENCH_SECTIONS ?? "throughput,latency,latency-rl,readable,readable-otlp").split(",");
const THROUGHPUT_SECONDS = Number(process.env.BENCH_SINGLE_SECONDS ?? 10);
const CONNECTIONS = 32;
const STEADY_RATE = Number(process.env.BENCH_STEADY_RATE ?? 500);
const STEADY_SECONDS = 10;
const READABLE_WRITES = 100;
const POLL_MS = 10;
const OTLP_EXPORTERS = 8;
const OTLP_EXPORTS = 400;
const HEADERS = { "content-type": "application/json", authorization: BENCH_AUTH };

let written = 0;
/** A `/call/start` body of a call of its own. */
function startBody(project: string): string {
  const i = written++;
  return JSON.stringify({ start: { project_id: project, id: `single-${i}`, op_name: "op", trace_id: `t${i}`, started_at: iso(T0 * 1000 + i), attributes: {}, inputs: { i } } });
}

interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly sent: number;
  readonly serviceCpuMicrosPerRequest: number;
}

/** autocannon against `/call/start`: closed loop over CONNECTIONS connections, or open loop at `rate`. */
async function load(server: ServiceProcess, project: string, seconds: number, rate?: number): Promise<LoadResult> {
  const meter = new CpuMeter(server.pid, null);
  const result = await autocannon({
    url: `${server.url}/call/start`,
    method: "POST",
    connections: rate === undefined ? CONNECTIONS : 64,
    ...(rate === undefined ? {} : { overallRate: rate }),
    duration: seconds,
    headers: HEADERS,
    requests: [{ setupRequest: (req) => ({ ...req, body: startBody(project) }) }],
  });
  const cpu = meter.read();
  const answered = result["2xx"] + result.non2xx;
  return {
    requestsPerSecond: answered / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    sent: result.requests.sent,
    serviceCpuMicrosPerRequest: (cpu.service * 1e6) / Math.max(1, answered),
  };
}

async function throughputSection(env: Record<string, string>): Promise<void> {
  const reference = await startReferenceServer();
  await load(reference, "bench/warm", 1);
  const raw = await load(reference, "bench/reference", THROUGHPUT_SECONDS);
  await reference.stop();
  const service = await spawnService(env);
  await load(service, "bench/warm", 1);
  const ours = await load(service, "bench/single", THROUGHPUT_SECONDS);
  await service.stop();
  const row = (server: string, r: LoadResult) => ({
    server,
    "requests/s": r.requestsPerSecond,
    "p50 ms": r.p50,
    "p99 ms": r.p99,
    "non-2xx": r.non2xx,
    errors: r.errors,
    "server CPU µs per request": r.serviceCpuMicrosPerRequest,
  });
  printTable(`Single /call/start, one call per request, ${CONNECTIONS} connections for ${THROUGHPUT_SECONDS} s (autocannon; the reference: a trivial Node server answering 200 in the same run)`, [
    row("tracehouse (durable log, PROCESSES=1)", ours),
    row("reference: node:http answering 200", raw),
  ]);
  console.log(`ratio (ours ÷ reference requests/s): ${(ours.requestsPerSecond / raw.requestsPerSecond).toFixed(3)}`);
}

async function latencySection(env: Record<string, string>): Promise<void> {
  const service = await spawnService(env);
  // Warmed at the steady rate: a closed-loop burst would leave a backlog storing into the measured seconds.
  await load(service, "bench/warm", 2, STEADY_RATE);
  const steady = await load(service, "bench/steady", STEADY_SECONDS, STEADY_RATE);
  await service.stop();
  printTable(`Single /call/start at a steady ${STEADY_RATE} requests/s for ${STEADY_SECONDS} s (autocannon, open loop)`, [{
    sent: steady.sent,
    "p50 ms": steady.p50,
    "p99 ms": steady.p99,
    "non-2xx": steady.non2xx,
    errors: steady.errors,
    "service CPU µs per request": steady.serviceCpuMicrosPerRequest,
  }]);
}

/** RL jobs one after the other until `running()` is false: each job's seconds from submitted to ended. */
async function rlJobsWhile(running: () => boolean, job: () => Promise<void>): Promise<number[]> {
  const seconds: number[] = [];
  while (running()) {
    const started = performance.now();
    await job();
    seconds.push((performance.now() - started) / 1000);
  }
  return seconds;
}

async function latencyUnderRlSection(env: Record<string, string>): Promise<void> {
  const sampled = await sampleTrajectories(await benchBaseModel());
  const service = await spawnService(env);
  try {
    const api = trainingApi(service.url);
    const modelId = await createModel(api, "requests", "rl-load");
    const job = () => rlJob(api, modelId, sampled);
    await job();
    await load(service, "bench/warm", 1);
    let loading = true;
    const [jobSeconds, steady] = await Promise.all([
      rlJobsWhile(() => loading, job),
      load(service, "bench/steady-rl", STEADY_SECONDS, STEADY_RATE).finally(() => (loading = false)),
    ]);
    printTable(`Single /call/start at a steady ${STEADY_RATE} requests/s for ${STEADY_SECONDS} s while RL jobs of 32 trajectories run back to back (autocannon, open loop; the last job started in the window ran to its end)`, [{
      "RL jobs run": jobSeconds.length,
      "each job s (submitted → ended)": jobSeconds.map((x) => x.toFixed(1)).join(", "),
      sent: steady.sent,
      "p50 ms": steady.p50,
      "p99 ms": steady.p99,
      "non-2xx": steady.non2xx,
      errors: steady.errors,
    }]);
  } finally {
    await service.stop();
  }
}

type Post = ReturnType<typeof keptAlivePoster>;

/** Writes a call (start and end in one upsert_batch), then reads it back every POLL_MS until it shows ended: ms from the acknowledgement. */
async function ackToReadable(post: Post, project: string, n: number): Promise<{ ackMs: number; readableMs: number }> {
  const id = `readable-${n}-${Date.now()}`;
  const at = Date.now() * 1000;
  const body = JSON.stringify({
    batch: [
      { mode: "start", req: { start: { project_id: project, id, op_name: "op", trace_id: id, started_at: iso(at), attributes: {}, inputs: { n } } } },
      { mode: "end", req: { end: { project_id: project, id, ended_at: iso(at + 1000), output: n, summary: {} } } },
    ],
  });
  const sent = performance.now();
  const write = await post("/call/upsert_batch", HEADERS, Buffer.from(body));
  if (write.status !== 200) throw new Error(`upsert_batch answered ${write.status}`);
  const acked = performance.now();
  const read = Buffer.from(JSON.stringify({ project_id: project, id }));
  for (;;) {
    const answer = await post("/call/read", HEADERS, read);
    if (answer.status !== 200) throw new Error(`call/read answered ${answer.status}`);
    const call = (JSON.parse(answer.body.toString("utf8")) as { call: { ended_at?: string | null } | null }).call;
    if (call?.ended_at) return { ackMs: acked - sent, readableMs: performance.now() - acked };
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function readableRows(service: ServiceProcess, project: string): Promise<{ ack: ReturnType<typeof stats>; readable: ReturnType<typeof stats> }> {
  const post = keptAlivePoster(service.url, 2);
  await ackToReadable(post, project, -1);
  const acks: number[] = [];
  const readable: number[] = [];
  for (let n = 0; n < READABLE_WRITES; n++) {
    const r = await ackToReadable(post, project, n);
    acks.push(r.ackMs);
    readable.push(r.readableMs);
    // Idle between writes: each write finds the service with nothing else to do.
    await new Promise((r) => setTimeout(r, 20));
  }
  return { ack: stats(acks), readable: stats(readable) };
}

/**
 * The OTLP bench's load: OTLP_EXPORTS exports of 512 spans sent by OTLP_EXPORTERS clients, a
 * refusal (429, 503) retried after its Retry-After as the exporters do; resolves with the
 * refusals once every export was accepted.
 */
async function otlpLoad(service: ServiceProcess): Promise<number> {
  const distinct = Array.from({ length: 16 }, (_, n) => gzipSync(protobufRequest(requestSpans(n))));
  const headers = { "content-type": "application/x-protobuf", "content-encoding": "gzip", authorization: BENCH_AUTH, project_id: "bench/otlp-load" };
  const bodies = Array.from({ length: OTLP_EXPORTS }, (_, n) => distinct[n % distinct.length]!);
  return sendAllRetrying({ post: keptAlivePoster(service.url, OTLP_EXPORTERS), path: "/otel/v1/traces", headers, bodies, senders: OTLP_EXPORTERS });
}

/** Writes read back one after the other while the OTLP load runs (each to its end, though the load ended meanwhile). */
async function readableUnderOtlp(service: ServiceProcess): Promise<{ writes: number; readable: ReturnType<typeof stats>; max: number; otlpSeconds: number; refusals: number }> {
  const post = keptAlivePoster(service.url, 2);
  let loading = true;
  const started = performance.now();
  const load = otlpLoad(service).finally(() => (loading = false));
  const readable: number[] = [];
  for (let n = 0; loading; n++) readable.push((await ackToReadable(post, "bench/readable-otlp", n)).readableMs);
  const refusals = await load;
  return { writes: readable.length, readable: stats(readable), max: Math.max(...readable), otlpSeconds: (performance.now() - started) / 1000, refusals };
}

async function readableSection(env: Record<string, string>): Promise<void> {
  const service = await spawnService(env);
  const { ack, readable } = await readableRows(service, "bench/readable");
  await service.stop();
  printTable(`Acknowledged → readable, idle service: ${READABLE_WRITES} calls, each an upsert_batch of its start and end, then /call/read every ${POLL_MS} ms until shown ended`, [
    { "ack p50 ms": ack.p50, "ack p99 ms": ack.p99, "readable p50 ms (from the ack)": readable.p50, "readable p99 ms": readable.p99 },
  ]);
}

async function readableUnderOtlpSection(env: Record<string, string>): Promise<void> {
  const service = await spawnService(env);
  const r = await readableUnderOtlp(service);
  await service.stop();
  printTable(`Acknowledged → readable while the OTLP bench's load runs (${OTLP_EXPORTS} exports × 512 spans from ${OTLP_EXPORTERS} exporters, accepted in ${r.otlpSeconds.toFixed(1)} s): calls written and read back one after the other`, [
    { writes: r.writes, "readable p50 ms (from the ack)": r.readable.p50, "readable p99 ms": r.readable.p99, "max ms": r.max, "exports refused (429/503, retried)": r.refusals },
  ]);
}

async function main() {
  const bench = await startBenchClickHouse("requests");
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  const env = { CLICKHOUSE_URL: bench.ch.url, CLICKHOUSE_DATABASE: "bench", DATA_DIR: bench.dir };
  try {
    if (SECTIONS.includes("throughput")) await throughputSection(env);
    if (SECTIONS.includes("latency")) await latencySection(env);
    if (SECTIONS.includes("latency-rl")) await latencyUnderRlSection(env);
    if (SECTIONS.includes("readable")) await readableSection(env);
    if (SECTIONS.includes("readable-otlp")) await readableUnderOtlpSection(env);
  } finally {
    await bench.stop();
  }
}

await main();
