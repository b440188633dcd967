/**
 * Soak (issue 13, "Load"): SOAK_MINUTES (default 10) of mixed traffic at a fixed rate on
 * loopback against the service as its own process (the default embedded log, a private
 * ClickHouse), then prints per endpoint the throughput, p50/p99 latency and errors, the
 * service's and ClickHouse's RSS over time as numbers, and writes the RSS chart as a PNG
 * (bench/out/soak-rss.png, gitignored). The goal: zero errors and flat memory.
 *
 * Traffic (per second, times SOAK_RATE, default 1): 4 OTLP/HTTP protobuf exports of 64 spans
 * (gzip, as the OTLP exporters send them), 10 `/call/upsert_batch` of 50 parts (25 calls,
 * start and end, in threads of 5-call turns), 5 `/calls/stream_query` pages of 100 newest
 * calls, 2 `/threads/stream_query` pages of 50 threads. The load is open: requests leave on
 * schedule whatever the answers (over at most 32 kept-alive connections; at most 256 in
 * flight per endpoint, one more counts as an error). Any answer but 200 is an error. At the end every acknowledged call
 * must be stored: the bench waits (at most 2 minutes) for `/calls/query_stats` to count them.
 *
 * Run: `SOAK_MINUTES=2 npx tsx bench/run.ts soak` (or `npx tsx bench/soak.bench.ts`).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ExportTraceServiceRequest } from "../services/otlp/protobuf.js";
import { lineChart } from "./png.js";
import { BENCH_AUTH, childPids, countCalls, printTable, spawnService, startBenchClickHouse, stats } from "./support.js";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const RATE = Number(process.env.SOAK_RATE ?? 1);
const PROJECT = "bench/soak";
const MAX_IN_FLIGHT = 256;
const CONNECTIONS = 32;
const SAMPLE_MS = 5_000;
const SPANS_PER_EXPORT = 64;
const CALLS_PER_BATCH = 25;
const CALLS_PER_TURN = 5;
const THREADS = 200;
const OUT_DIR = join("bench", "out");

interface SoakRequest {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array<ArrayBuffer> | string;
  /** Calls this request stores once acknowledged. */
  readonly calls: number;
}

interface Endpoint {
  readonly name: string;
  readonly perSecond: number;
  make(n: number): SoakRequest;
}

const json = (path: string, body: unknown, calls = 0): SoakRequest => ({ path, headers: { "content-type": "application/json" }, body: JSON.stringify(body), calls });
const hexId = (bytes: number, ...parts: number[]) => {
  const out = Buffer.alloc(bytes, 0x33);
  parts.forEach((p, i) => out.writeUInt32BE(p >>> 0, i * 4));
  return out;
};

function otlpExport(n: number): SoakRequest {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = Array.from({ length: SPANS_PER_EXPORT }, (_, i) => {
    const trace = Math.floor(i / 8);
    const root = i % 8 === 0;
    const start = now + BigInt(i) * 1_000_000n;
    return {
      trace_id: hexId(16, n + 1, trace + 1, 0x50a4),
      span_id: hexId(8, n + 1, i + 1),
      parent_span_id: root ? Buffer.alloc(0) : hexId(8, n + 1, trace * 8 + 1),
      name: root ? "invoke_agent planner" : "chat gpt-4o-mini",
      kind: root ? 1 : 3,
      start_time_unix_nano: start.toString(),
      end_time_unix_nano: (start + 800_000n).toString(),
      attributes: [
        { key: "gen_ai.operation.name", value: { string_value: root ? "invoke_agent" : "chat" } },
        { key: "gen_ai.request.model", value: { string_value: "gpt-4o-mini" } },
        { key: "gen_ai.usage.input_tokens", value: { int_value: 100 + (i % 50) } },
        { key: "gen_ai.usage.output_tokens", value: { int_value: 20 + (i % 30) } },
        { key: "gen_ai.input.messages", value: { string_value: JSON.stringify([{ role: "user", content: `question ${n}.${i}: plan a trip` }]) } },
      ],
      status: { code: 0, message: "" },
    };
  });
  const message = ExportTraceServiceRequest.fromObject({
    resource_spans: [{ resource: { attributes: [{ key: "service.name", value: { string_value: "soak-agent" } }] }, scope_spans: [{ scope: { name: "soak", version: "1" }, spans }] }],
  });
  const bytes = ExportTraceServiceRequest.encode(message).finish();
  return {
    path: "/otel/v1/traces",
    headers: { "content-type": "application/x-protobuf", "content-encoding": "gzip", project_id: PROJECT },
    body: new Uint8Array(gzipSync(bytes)),
    calls: SPANS_PER_EXPORT,
  };
}

function upsertBatch(n: number): SoakRequest {
  const now = Date.now();
  const batch = [];
  for (let i = 0; i < CALLS_PER_BATCH; i++) {
    const id = `u${n}-${i}`;
    const turn = `u${n}-${i - (i % CALLS_PER_TURN)}`;
    const startedAt = new Date(now + i).toISOString();
    const start = {
      project_id: PROJECT, id, trace_id: `tr-${n}`, op_name: i % CALLS_PER_TURN === 0 ? "weave:///bench/soak/op/turn:v1" : "weave:///bench/soak/op/step:v1",
      started_at: startedAt, thread_id: `th-${(n * 5 + Math.floor(i / CALLS_PER_TURN)) % THREADS}`, turn_id: turn,
      ...(id === turn ? {} : { parent_id: turn }),
      attributes: { env: "soak" }, inputs: { question: `q ${n}.${i}`, k: i },
    };
    batch.push({ mode: "start", req: { start } });
    batch.push({ mode: "end", req: { end: { project_id: PROJECT, id, started_at: startedAt, ended_at: new Date(now + i + 5).toISOString(), output: { answer: i }, summary: {} } } });
  }
  return json("/call/upsert_batch", { batch }, CALLS_PER_BATCH);
}

const ENDPOINTS: readonly Endpoint[] = [
  { name: "OTLP export (64 spans, protobuf, gzip)", perSecond: 4 * RATE, make: otlpExport },
  { name: "/call/upsert_batch (50 parts)", perSecond: 10 * RATE, make: upsertBatch },
  { name: "/calls/stream_query (100 newest)", perSecond: 5 * RATE, make: () => json("/calls/stream_query", { project_id: PROJECT, sort_by: [{ field: "started_at", direction: "desc" }], limit: 100 }) },
  { name: "/threads/stream_query (50 threads)", perSecond: 2 * RATE, make: () => json("/threads/stream_query", { project_id: PROJECT, sort_by: [{ field: "last_updated", direction: "desc" }], limit: 50 }) },
];

interface Tally {
  latencies: number[];
  ok: number;
  errors: Map<string, number>;
  inFlight: number;
  acknowledgedCalls: number;
}

const rssMb = (pid: number | undefined): number => {
  if (pid === undefined) return NaN;
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
};

/** Least-squares slope of y over x. */
function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  const num = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0);
  const den = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return num / den;
}

async function send(url: string, endpoint: Endpoint, n: number, tally: Tally): Promise<void> {
  const countError = (what: string) => tally.errors.set(what, (tally.errors.get(what) ?? 0) + 1);
  if (tally.inFlight >= MAX_IN_FLIGHT) {
    countError("not sent: 256 in flight");
    return;
  }
  const request = endpoint.make(n);
  tally.inFlight++;
  const started = performance.now();
  try {
    const status = await post(url, request);
    tally.latencies.push(performance.now() - started);
    if (status === 200) {
      tally.ok++;
      tally.acknowledgedCalls += request.calls;
    } else countError(String(status));
  } catch (err) {
    countError(errorText(err));
  } finally {
    tally.inFlight--;
  }
}

/**
 * Kept-alive connections, at most CONNECTIONS at once (as a client library's pool would):
 * requests beyond wait here, and that wait counts in their latency (the schedule is open).
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });

function post(url: string, request: SoakRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = typeof request.body === "string" ? Buffer.from(request.body) : request.body;
    const req = http.request(`${url}${request.path}`, { method: "POST", agent, headers: { authorization: BENCH_AUTH, "content-length": body.byteLength, ...request.headers } }, (res) => {
      res.resume();
      res.once("end", () => resolve(res.statusCode ?? 0));
      res.once("error", reject);
    });
    req.once("error", reject);
    req.end(body);
  });
}

const errorText = (err: unknown): string => {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : err instanceof Error ? err.message : String(err);
};

async function metricsSummary(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = (pattern: RegExp) => text.split("\n").filter((l) => pattern.test(l)).reduce((s, l) => s + Number(l.split(" ").at(-1)), 0);
  return {
    "http_requests_total": sum(/^http_requests_total\{/),
    "http_rejects_total": sum(/^http_rejects_total\{/),
    "worker_batch_events_count (events topic)": sum(/^worker_batch_events_count\{topic="tracehouse\.events"/),
    "worker_batch_events_sum (events topic)": sum(/^worker_batch_events_sum\{topic="tracehouse\.events"/),
    "clickhouse_rows_written_total{table=calls}": sum(/^clickhouse_rows_written_total\{table="calls"/),
    "clickhouse_insert_seconds_count{table=calls}": sum(/^clickhouse_insert_seconds_count\{table="calls"/),
  };
}

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("soak");
  const service = await spawnService({ CLICKHOUSE_URL: bench.ch.url, DATA_DIR: join(bench.dir, "service") });
  const clickhousePid = childPids("clickhouse")[0];
  console.log(`soak: ${MINUTES} min, rate ×${RATE}, ClickHouse data on ${bench.filesystem}, service pid ${service.pid}`);
  const tallies = ENDPOINTS.map((): Tally => ({ latencies: [], ok: 0, errors: new Map(), inFlight: 0, acknowledgedCalls: 0 }));
  const inFlight = new Set<Promise<void>>();
  const rss: { t: number; service: number; clickhouse: number }[] = [];
  const started = performance.now();
  const durationMs = MINUTES * 60_000;
  const sent = ENDPOINTS.map(() => 0);
  const sample = () => rss.push({ t: (performance.now() - started) / 1000, service: rssMb(service.pid), clickhouse: rssMb(clickhousePid) });
  sample();
  const sampler = setInterval(sample, SAMPLE_MS);
  try {
    // Open load: every 10 ms, each endpoint sends what its schedule says is due by now.
    await new Promise<void>((done) => {
      const tick = setInterval(() => {
        const elapsed = performance.now() - started;
        if (elapsed >= durationMs) {
          clearInterval(tick);
          done();
          return;
        }
        ENDPOINTS.forEach((endpoint, i) => {
          const due = Math.floor((elapsed / 1000) * endpoint.perSecond) + 1;
          while (sent[i]! < due) {
            const p = send(service.url, endpoint, sent[i]!++, tallies[i]!);
            inFlight.add(p);
            void p.finally(() => inFlight.delete(p));
          }
        });
      }, 10);
    });
    await Promise.all(inFlight);
    sample();
    const wall = (performance.now() - started) / 1000;
    clearInterval(sampler);

    printTable(`Per endpoint (${wall.toFixed(0)} s of load)`, ENDPOINTS.map((endpoint, i) => {
      const t = tallies[i]!;
      const s = stats(t.latencies);
      const errors = [...t.errors.values()].reduce((a, b) => a + b, 0);
      return {
        endpoint: endpoint.name,
        requests: sent[i]!,
        "ok/s": t.ok / wall,
        "p50 ms": s.p50,
        "p99 ms": s.p99,
        "max ms": Math.max(...t.latencies),
        errors,
        "error kinds": [...t.errors].map(([k, v]) => `${k}×${v}`).join(", ") || "-",
      };
    }));
    const acknowledged = tallies.reduce((n, t) => n + t.acknowledgedCalls, 0);
    const totalErrors = tallies.reduce((n, t) => n + [...t.errors.values()].reduce((a, b) => a + b, 0), 0);
    console.log(`acknowledged calls (upserted calls + OTLP spans): ${acknowledged}, ${(acknowledged / wall).toFixed(0)}/s; errors: ${totalErrors}`);

    const drainStart = performance.now();
    let stored = await countCalls(service.url, PROJECT);
    while (stored < acknowledged && performance.now() - drainStart < 120_000) {
      await new Promise((r) => setTimeout(r, 1_000));
      stored = await countCalls(service.url, PROJECT);
    }
    console.log(`stored calls: ${stored} of ${acknowledged} acknowledged (${((performance.now() - drainStart) / 1000).toFixed(1)} s after the load ended)`);

    const perMinute: Record<string, string | number>[] = [];
    for (let minute = 0; minute <= Math.ceil(wall / 60); minute++) {
      const at = rss.filter((r) => r.t <= minute * 60 + SAMPLE_MS / 1000).at(-1);
      if (at && !perMinute.some((row) => row["t s"] === Math.round(at.t))) perMinute.push({ minute, "t s": Math.round(at.t), "service RSS MB": at.service, "ClickHouse RSS MB": at.clickhouse });
    }
    printTable("RSS over time (last sample of each minute)", perMinute);
    const settled = rss.filter((r) => r.t >= wall * 0.25);
    const peak = Math.max(...rss.map((r) => r.service));
    console.log(
      `service RSS: start ${rss[0]!.service.toFixed(0)} MB, peak ${peak.toFixed(0)} MB, end ${rss.at(-1)!.service.toFixed(0)} MB; ` +
        `slope after the first quarter ${(slope(settled.map((r) => [r.t / 60, r.service])) || 0).toFixed(1)} MB/min ` +
        `(ClickHouse ${(slope(settled.map((r) => [r.t / 60, r.clickhouse])) || 0).toFixed(1)} MB/min); ${rss.length} samples every ${SAMPLE_MS / 1000} s`,
    );
    mkdirSync(OUT_DIR, { recursive: true });
    const chart = join(OUT_DIR, "soak-rss.png");
    writeFileSync(
      chart,
      lineChart(
        [
          { color: [200, 40, 40], points: rss.map((r) => [r.t, r.service] as const) },
          { color: [40, 90, 200], points: rss.map((r) => [r.t, r.clickhouse] as const).filter((p) => Number.isFinite(p[1])) },
        ],
        { width: 640, height: 240, xStep: 60, yStep: 100 },
      ),
    );
    console.log(`RSS chart: ${chart} (red: service, blue: ClickHouse; x: one grid line per minute, y: one per 100 MB)`);
    printTable("From /metrics at the end", Object.entries(await metricsSummary(service.url)).map(([metric, value]) => ({ metric, value })));
  } finally {
    clearInterval(sampler);
    agent.destroy();
    await service.stop();
    await bench.stop();
  }
}

await main();
