/**
 * OTLP ingest benchmarks (issue: OTLP trace ingestion). Prints:
 * - end to end: protobuf exports of 512 spans each, gzip, from 8 concurrent exporters to
 *   `/otel/v1/traces` of the service running as its own process (embedded queue, local
 *   ClickHouse): spans/s accepted (all answered 200) and spans/s until queryable
 *   (`/calls/query_stats` counts them all), with the ratio to clickhouse-client inserting
 *   the same stored rows from a file, and where the CPU went;
 * - decode cost alone, in this process: µs per span to decode protobuf and OTLP/JSON
 *   bodies of the same spans, to map them to call events, and to gunzip.
 *
 * Bodies are pre-encoded with protobufjs from the vendored proto (`proto/`), every request
 * with its own trace and span ids. Sizes: BENCH_OTLP_REQUESTS (default 400 requests).
 */
import { spawnSync } from "node:child_process";
import { cpus } from "node:os";
import { gunzipSync, gzipSync } from "node:zlib";
import { decodeJsonRequest, decodeProtobufRequest } from "../services/ingest/otlp/decode.js";
import { mapSpans } from "../services/ingest/otlp/mapSpan.js";
import { ExportTraceServiceRequest } from "../services/ingest/otlp/protobuf.js";
import { BENCH_AUTH, BENCH_PROCESSES, childPids, clickhouseClientInsertRate, CpuMeter, startBenchClickHouse, printCpuTable, printTable, sampleServiceRss, spawnService, type ServiceProcess } from "./support.js";

const EXPORTERS = 8;
const SPANS_PER_REQUEST = 512;
const REQUESTS = Number(process.env.BENCH_OTLP_REQUESTS ?? 400);
const DECODE_REQUESTS = Math.min(REQUESTS, 40);
const PROJECT = "bench/otlp";
const T0_NS = BigInt(Date.UTC(2026, 0, 5)) * 1_000_000n;
const SPANS_PER_TRACE = 8;

type Value = string | number | boolean;

interface BenchSpan {
  traceId: Buffer;
  spanId: Buffer;
  parentSpanId: Buffer;
  name: string;
  kind: number;
  start: bigint;
  end: bigint;
  attributes: [string, Value][];
  status: { code: number; message: string };
}

const RESOURCE: [string, Value][] = [
  ["service.name", "travel-agent"],
  ["service.version", "1.4.2"],
  ["deployment.environment", "bench"],
  ["host.name", "bench-host-1"],
  ["telemetry.sdk.name", "opentelemetry"],
  ["telemetry.sdk.language", "python"],
  ["telemetry.sdk.version", "1.30.0"],
];

function id(bytes: number, ...parts: number[]): Buffer {
  const out = Buffer.alloc(bytes, 0x5a);
  parts.forEach((p, i) => out.writeUInt32BE(p >>> 0, i * 4));
  return out;
}

/** One agent trace of 8 spans: an agent root, 4 LLM calls, 2 tools, 1 failing tool. */
function traceSpans(request: number, trace: number): BenchSpan[] {
  const traceId = id(16, request + 1, trace + 1, 0xbeef);
  const at = T0_NS + BigInt(request) * 1_000_000_000n + BigInt(trace) * 10_000_000n;
  const root = id(8, request + 1, trace * SPANS_PER_TRACE);
  const spans: BenchSpan[] = [{
    traceId, spanId: root, parentSpanId: Buffer.alloc(0), name: "invoke_agent planner", kind: 1,
    start: at, end: at + 9_000_000n,
    attributes: [
      ["gen_ai.operation.name", "invoke_agent"],
      ["gen_ai.agent.name", "planner"],
      ["gen_ai.conversation.id", `conv-${request}-${trace % 16}`],
      ["gen_ai.input.messages", JSON.stringify([{ role: "user", parts: [{ type: "text", content: `Plan a trip number ${trace} to Lyon next week, by train, with a hotel near the station.` }] }])],
      ["gen_ai.output.messages", JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: "Take the TGV 6601 at 07:56 and stay at Hotel Part-Dieu." }] }])],
    ],
    status: { code: 0, message: "" },
  }];
  for (let i = 1; i < SPANS_PER_TRACE; i++) {
    const start = at + BigInt(i) * 1_000_000n;
    const base = { traceId, spanId: id(8, request + 1, trace * SPANS_PER_TRACE + i), parentSpanId: root, start, end: start + 900_000n, status: { code: 0, message: "" } };
    if (i <= 4) {
      spans.push({
        ...base, name: "chat gpt-4o-mini", kind: 3,
        attributes: [
          ["gen_ai.operation.name", "chat"],
          ["gen_ai.system", "openai"],
          ["gen_ai.request.model", "gpt-4o-mini"],
          ["gen_ai.response.model", "gpt-4o-mini-2024-07-18"],
          ["gen_ai.request.temperature", 0.2],
          ["gen_ai.request.max_tokens", 512],
          ["gen_ai.usage.input_tokens", 180 + i],
          ["gen_ai.usage.output_tokens", 40 + trace % 7],
          ["gen_ai.input.messages", JSON.stringify([{ role: "system", content: "You are a travel planner." }, { role: "user", content: `Step ${i} of trip ${trace}: find options.` }])],
          ["gen_ai.output.messages", JSON.stringify([{ role: "assistant", content: `Option ${i}: search_trains(to="Lyon")` }])],
        ],
      });
    } else if (i <= 6) {
      spans.push({
        ...base, name: "execute_tool search_trains", kind: 1,
        attributes: [
          ["gen_ai.operation.name", "execute_tool"],
          ["gen_ai.tool.name", "search_trains"],
          ["input.value", JSON.stringify({ to: "Lyon", day: "2026-01-12", passengers: 1 })],
          ["output.value", JSON.stringify({ trains: [{ id: "TGV 6601", departs: "07:56" }, { id: "TGV 6605", departs: "09:56" }] })],
        ],
      });
    } else {
      spans.push({
        ...base, name: "execute_tool book_hotel", kind: 1,
        attributes: [["gen_ai.operation.name", "execute_tool"], ["gen_ai.tool.name", "book_hotel"], ["input.value", JSON.stringify({ city: "Lyon", nights: 2 })]],
        status: { code: 2, message: "hotel API timed out" },
      });
    }
  }
  return spans;
}

function requestSpans(request: number): BenchSpan[] {
  const spans: BenchSpan[] = [];
  for (let t = 0; t < SPANS_PER_REQUEST / SPANS_PER_TRACE; t++) spans.push(...traceSpans(request, t));
  return spans;
}

const pbValue = (v: Value) =>
  typeof v === "string" ? { string_value: v } : typeof v === "boolean" ? { bool_value: v } : Number.isInteger(v) ? { int_value: v } : { double_value: v };
const pbAttrs = (attrs: [string, Value][]) => attrs.map(([key, value]) => ({ key, value: pbValue(value) }));

function protobufRequest(spans: BenchSpan[]): Buffer {
  const message = ExportTraceServiceRequest.fromObject({
    resource_spans: [{
      resource: { attributes: pbAttrs(RESOURCE) },
      scope_spans: [{
        scope: { name: "opentelemetry.instrumentation.openai_agents", version: "0.1.0" },
        spans: spans.map((s) => ({
          trace_id: s.traceId, span_id: s.spanId, parent_span_id: s.parentSpanId, name: s.name, kind: s.kind,
          start_time_unix_nano: s.start.toString(), end_time_unix_nano: s.end.toString(),
          attributes: pbAttrs(s.attributes), status: s.status,
        })),
      }],
    }],
  });
  const bytes = ExportTraceServiceRequest.encode(message).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

const jsonValue = (v: Value) =>
  typeof v === "string" ? { stringValue: v } : typeof v === "boolean" ? { boolValue: v } : Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
const jsonAttrs = (attrs: [string, Value][]) => attrs.map(([key, value]) => ({ key, value: jsonValue(value) }));

function jsonRequest(spans: BenchSpan[]): Buffer {
  return Buffer.from(JSON.stringify({
    resourceSpans: [{
      resource: { attributes: jsonAttrs(RESOURCE) },
      scopeSpans: [{
        scope: { name: "opentelemetry.instrumentation.openai_agents", version: "0.1.0" },
        spans: spans.map((s) => ({
          traceId: s.traceId.toString("hex"), spanId: s.spanId.toString("hex"), parentSpanId: s.parentSpanId.toString("hex"),
          name: s.name, kind: s.kind, startTimeUnixNano: s.start.toString(), endTimeUnixNano: s.end.toString(),
          attributes: jsonAttrs(s.attributes), status: s.status,
        })),
      }],
    }],
  }));
}

async function countCalls(url: string): Promise<number> {
  const res = await fetch(`${url}/calls/query_stats`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: BENCH_AUTH },
    body: JSON.stringify({ project_id: PROJECT }),
  });
  return ((await res.json()) as { count: number }).count;
}

async function sendAll(service: ServiceProcess, clickhousePid: number | null, bodies: Buffer[]) {
  let next = 0;
  let retries = 0;
  const rss = sampleServiceRss(service.pid);
  const meter = new CpuMeter(service.pid, clickhousePid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: EXPORTERS }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        for (;;) {
          const res = await fetch(`${service.url}/otel/v1/traces`, {
            method: "POST",
            headers: { "content-type": "application/x-protobuf", "content-encoding": "gzip", authorization: BENCH_AUTH, project_id: PROJECT },
            body: new Uint8Array(body),
          });
          const answer = Buffer.from(await res.arrayBuffer());
          if (res.status === 200) {
            if (answer.length > 0) throw new Error(`partial success: ${answer.toString()}`);
            break;
          }
          if (res.status !== 429 && res.status !== 503) throw new Error(`export answered ${res.status}: ${answer.toString()}`);
          retries++;
          await new Promise((r) => setTimeout(r, Number(res.headers.get("retry-after") ?? 1) * 200));
        }
      }
    }),
  );
  const accepted = performance.now();
  const total = bodies.length * SPANS_PER_REQUEST;
  while ((await countCalls(service.url)) < total) await new Promise((r) => setTimeout(r, 50));
  const queryable = performance.now();
  const peakRss = rss.stop();
  const cpu = meter.read();
  return { total, acceptedSeconds: (accepted - started) / 1000, queryableSeconds: (queryable - started) / 1000, retries, peakRss, cpu };
}

/** Median µs per span of `fn` over the bodies, best of a few rounds. */
function microsPerSpan<T>(bodies: T[], spansPerBody: number, fn: (body: T) => unknown, rounds = 5): number {
  for (const b of bodies.slice(0, 3)) fn(b); // warm up
  const perRound: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    for (const b of bodies) fn(b);
    perRound.push(((performance.now() - t) * 1000) / (bodies.length * spansPerBody));
  }
  return perRound.sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
}

function decodeCosts(pbBodies: Buffer[], jsonBodies: Buffer[], gzBodies: Buffer[]) {
  const ctx = { project_id: PROJECT, wb_user_id: "bench", maxSpanBytes: 4 * 1024 * 1024 };
  const pbBatches = pbBodies.map(decodeProtobufRequest);
  const gunzip = microsPerSpan(gzBodies, SPANS_PER_REQUEST, (b) => gunzipSync(b));
  const pb = microsPerSpan(pbBodies, SPANS_PER_REQUEST, decodeProtobufRequest);
  const json = microsPerSpan(jsonBodies, SPANS_PER_REQUEST, decodeJsonRequest);
  const map = microsPerSpan(pbBatches, SPANS_PER_REQUEST, (batch) => mapSpans(batch, ctx));
  const avg = (list: Buffer[]) => list.reduce((n, b) => n + b.length, 0) / list.length / SPANS_PER_REQUEST;
  return [
    { step: "gunzip (protobuf body)", "µs/span": gunzip, "bytes/span": avg(gzBodies), "spans/s on one core": 1e6 / gunzip },
    { step: "decode protobuf", "µs/span": pb, "bytes/span": avg(pbBodies), "spans/s on one core": 1e6 / pb },
    { step: "decode OTLP/JSON", "µs/span": json, "bytes/span": avg(jsonBodies), "spans/s on one core": 1e6 / json },
    { step: "map spans → call events", "µs/span": map, "bytes/span": "", "spans/s on one core": 1e6 / map },
    { step: "protobuf total (gunzip + decode + map)", "µs/span": gunzip + pb + map, "bytes/span": "", "spans/s on one core": 1e6 / (gunzip + pb + map) },
  ];
}

async function main() {
  console.log(`pre-encoding ${REQUESTS} requests of ${SPANS_PER_REQUEST} spans (${cpus().length} cores)…`);
  const pbBodies: Buffer[] = [];
  const gzBodies: Buffer[] = [];
  const jsonBodies: Buffer[] = [];
  for (let r = 0; r < REQUESTS; r++) {
    const spans = requestSpans(r);
    const pb = protobufRequest(spans);
    gzBodies.push(gzipSync(pb));
    if (r < DECODE_REQUESTS) {
      pbBodies.push(pb);
      jsonBodies.push(jsonRequest(spans));
    }
  }

  printTable(`Decode cost alone (in process, ${DECODE_REQUESTS} requests × ${SPANS_PER_REQUEST} spans, median of 5 rounds)`, decodeCosts(pbBodies, jsonBodies, gzBodies.slice(0, DECODE_REQUESTS)));

  const bench = await startBenchClickHouse("otlp");
  const { ch, dir } = bench;
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  const database = "bench";
  try {
    const service = await spawnService({ CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: database, DATA_DIR: dir });
    const result = await sendAll(service, childPids("clickhouse")[0] ?? null, gzBodies);
    await service.stop();
    const clientRowsPerSecond = clickhouseClientInsertRate(ch, database, PROJECT, "calls_copy_otlp");
    const queryableRate = result.total / result.queryableSeconds;
    printTable(`OTLP ingest end to end: ${REQUESTS} protobuf exports × ${SPANS_PER_REQUEST} spans, gzip, ${EXPORTERS} concurrent exporters (embedded queue, PROCESSES=${BENCH_PROCESSES})`, [{
      spans: result.total,
      "accepted spans/s": result.total / result.acceptedSeconds,
      "queryable spans/s": queryableRate,
      "clickhouse-client rows/s": clientRowsPerSecond,
      "ratio (queryable ÷ client)": (queryableRate / clientRowsPerSecond).toFixed(3),
      "429/503 retries": result.retries,
      "peak RSS MB": result.peakRss,
    }]);
    printCpuTable(result.cpu, result.queryableSeconds, result.total, "span");
    const sizes = spawnSync("clickhouse-client", ["--port", String(ch.tcpPort), "--database", database, "-q",
      `SELECT avg(length(attributes)), avg(length(otel_dump)), avg(length(inputs)) + avg(length(ifNull(output, ''))), avg(length(json_paths)) FROM calls WHERE project_id = '${PROJECT}' FORMAT TSV`], { encoding: "utf8" });
    const [attributes, otelDump, io, leaves] = sizes.stdout.trim().split("\t").map(Number);
    printTable("Stored row, average per span", [{ "attributes chars": attributes ?? 0, "otel_dump chars": otelDump ?? 0, "inputs+output chars": io ?? 0, "json_paths leaves": leaves ?? 0 }]);
  } finally {
    await bench.stop();
  }
}

await main();
