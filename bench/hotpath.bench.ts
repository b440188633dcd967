/**
 * The calls ingest hot path in one thread, without HTTP or ClickHouse: CPU µs per part of
 * each stage an `upsert_batch` of 500 parts goes through (the calls bench's bodies). The
 * request thread: JSON parse, body validation, events, the log record; the log's consumer
 * thread: the record decoded, merged, RowBinary rows. Per-stage thread CPU, so the figures
 * hold on a loaded machine better than throughput does. `npx tsx bench/hotpath.bench.ts`
 * (BENCH_HOTPATH_REQUESTS=200 by default). A second table runs the log thread's part on
 * whole batches of BATCH_MAX_EVENTS, with V8's garbage collection time. A third table follows
 * the OTLP bench's protobuf exports (512 spans each) through the same stages, per span:
 * gunzip, decode, the spans' checks, the log record of the export event, then the consumer's
 * decode of the record, the export decoded again and mapped to call events, and merge + rows,
 * on batches of BATCH_MAX_EVENTS spans (written in parts, as the worker does).
 */
import { CallCreateBatchReq } from "../services/contract/calls.js";
import { checkCallCreateBatch } from "../services/contract/callsFastCheck.js";
import { idMaker, toEndEvent, toStartEvent } from "../services/ingest/callEvents.js";
import { traceEventsTopic, type TraceEvent } from "../services/queue/events.js";
import { callEventParts, EXPORTED_CALLS_PER_WRITE } from "../services/worker/callWorker.js";
import { recordCodecOf } from "../services/queue/durableLog/recordCodec.js";
import type { ClickHouseStore } from "../services/store/clickhouse.js";
import { CallsWriteRepository } from "../services/store/calls/callsWrite.js";
import { CallBatchWriter } from "../services/worker/callBatchWriter.js";
import { checkJsonBytes, DEFAULT_JSON_MAX_DEPTH } from "../services/jsonBounds.js";
import { PerformanceObserver } from "node:perf_hooks";
import { DEFAULTS } from "../services/config.js";
import { printTable } from "./support.js";
import { batchBody, PARTS_PER_REQUEST } from "./callBodies.js";
import { gunzipSync, gzipSync } from "node:zlib";
import { decodeProtobufRequest } from "../services/otlp/decode.js";
import { checkSpans } from "../services/otlp/mapSpan.js";
import { exportedCalls, otlpExportEvent } from "../services/otlp/exportEvent.js";
import { protobufRequest, requestSpans, SPANS_PER_REQUEST } from "./otlpSpans.js";

const REQUESTS = Number(process.env.BENCH_HOTPATH_REQUESTS ?? 200);
const ROUNDS = 5;


const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

function timed<T>(totals: Map<string, number>, stage: string, run: () => T): T {
  const before = cpuMicros();
  const out = run();
  totals.set(stage, (totals.get(stage) ?? 0) + cpuMicros() - before);
  return out;
}

async function timedAsync(totals: Map<string, number>, stage: string, run: () => Promise<void>): Promise<void> {
  const before = cpuMicros();
  await run();
  totals.set(stage, (totals.get(stage) ?? 0) + cpuMicros() - before);
}

type Body = { batch: { mode: string; req: { start?: unknown; end?: unknown } }[] };

function events(body: Body): TraceEvent[] {
  const ids = idMaker(null, "call_upsert_batch");
  return body.batch.map((item, position) =>
    item.mode === "start" ? toStartEvent(item.req.start as Parameters<typeof toStartEvent>[0], "bench", ids, position) : toEndEvent(item.req.end as Parameters<typeof toEndEvent>[0]),
  );
}

/** A store that answers lookups with nothing and drops inserts: only the worker's CPU is measured. */
const nullStore = { rows: async () => [], insert: async () => {}, insertRowBinary: async () => {} } as unknown as ClickHouseStore;
const writer = new CallBatchWriter(new CallsWriteRepository(nullStore));
const records = recordCodecOf(traceEventsTopic("bench"));
const texts = Array.from({ length: REQUESTS }, (_, n) => Buffer.from(batchBody("bench/hot", n)));
/** Writes a batch as the worker does (callWorker.ts). */
async function writeAll(events: readonly TraceEvent[]): Promise<void> {
  for (const part of callEventParts(events)) await writer.write(part);
}

const totals = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  for (const bytes of texts) {
    timed(totals, "request: body bytes check (UTF-8, depth)", () => checkJsonBytes(bytes, DEFAULT_JSON_MAX_DEPTH));
    const parsed = timed(totals, "request: JSON.parse", () => JSON.parse(bytes.toString("utf8")) as unknown);
    timed(totals, "request: validate (zod, for comparison)", () => CallCreateBatchReq.parse(parsed));
    const valid = timed(totals, "request: validate (hand-written check)", () => checkCallCreateBatch(parsed)) as Body;
    const made = timed(totals, "request: events", () => events(valid));
    const record = timed(totals, "request: log record", () => records.encode(made));
    const decoded = timed(totals, "consumer: decode record", () => records.decode(record));
    await timedAsync(totals, "consumer: merge + rows", () => writeAll(decoded.messages));
  }
}
const parts = REQUESTS * PARTS_PER_REQUEST * ROUNDS;
printTable(`Hot path, CPU µs per part (${parts.toLocaleString("en")} parts)`, [...totals].map(([stage, micros]) => ({ stage, "µs per part": micros / parts })));

/**
 * The log thread as it runs: records decoded and written a whole batch at a time
 * (BATCH_MAX_EVENTS, the service's default unless set), so that a batch's events outlive the
 * young generation as they do in the service; garbage collection time from V8's own entries.
 */
const batchEvents = Number(process.env.BATCH_MAX_EVENTS ?? DEFAULTS.BATCH_MAX_EVENTS);
/** Milliseconds V8 spent collecting garbage while `run` ran. */
async function gcMillisDuring(run: () => Promise<void>): Promise<number> {
  let millis = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) millis += entry.duration;
  });
  observer.observe({ entryTypes: ["gc"] });
  await run();
  await new Promise((r) => setTimeout(r, 100));
  observer.disconnect();
  return millis;
}

const encoded = texts.map((bytes) => records.encode(events(checkCallCreateBatch(JSON.parse(bytes.toString("utf8"))) as Body)));
const recordsPerBatch = Math.max(1, Math.round(batchEvents / PARTS_PER_REQUEST));
const batchTotals = new Map<string, number>();
const gcMillis = await gcMillisDuring(async () => {
  for (let round = 0; round < ROUNDS; round++) {
    for (let from = 0; from < encoded.length; from += recordsPerBatch) {
      const batch = timed(batchTotals, "decode records", () => encoded.slice(from, from + recordsPerBatch).flatMap((r) => records.decode(r).messages));
      await timedAsync(batchTotals, "merge + rows", () => writeAll(batch));
    }
  }
});
printTable(`Log thread, batches of ${(recordsPerBatch * PARTS_PER_REQUEST).toLocaleString("en")} parts, CPU µs per part (${parts.toLocaleString("en")} parts)`, [
  ...[...batchTotals].map(([stage, micros]) => ({ stage, "µs per part": micros / parts })),
  { stage: "garbage collection in both (wall)", "µs per part": (gcMillis * 1000) / parts },
]);

const OTLP_REQUESTS = Number(process.env.BENCH_HOTPATH_OTLP_REQUESTS ?? 100);
const exports = Array.from({ length: OTLP_REQUESTS }, (_, n) => gzipSync(protobufRequest(requestSpans(n))));
const otlpSource = { project_id: "bench/hot", wb_user_id: "bench", format: "protobuf", maxSpanBytes: 1 << 20 } as const;
const exportsPerBatch = Math.max(1, Math.round(batchEvents / SPANS_PER_REQUEST));
const otlpTotals = new Map<string, number>();
const otlpGcMillis = await gcMillisDuring(async () => {
  for (let round = 0; round < ROUNDS; round++) {
    for (let from = 0; from < exports.length; from += exportsPerBatch) {
      const logged = exports.slice(from, from + exportsPerBatch).map((body) => {
        const bytes = timed(otlpTotals, "request: gunzip", () => gunzipSync(body));
        const batch = timed(otlpTotals, "request: decode protobuf", () => decodeProtobufRequest(bytes));
        const checked = timed(otlpTotals, "request: check spans", () => checkSpans(batch, otlpSource.maxSpanBytes));
        const event = timed(otlpTotals, "request: export event (base64)", () => otlpExportEvent({ ...otlpSource, body: bytes }, checked)!);
        return timed(otlpTotals, "request: log record", () => records.encode([event]));
      });
      const batch = timed(otlpTotals, "consumer: decode records", () => logged.flatMap((r) => records.decode(r).messages));
      const exportsPerWrite = Math.max(1, Math.floor(EXPORTED_CALLS_PER_WRITE / SPANS_PER_REQUEST));
      for (let at = 0; at < batch.length; at += exportsPerWrite) {
        const calls = timed(otlpTotals, "consumer: decode + map the exports", () =>
          batch.slice(at, at + exportsPerWrite).flatMap((event) => (event.kind === "otlp_export" ? exportedCalls(event) : [])),
        );
        await timedAsync(otlpTotals, "consumer: merge + rows", () => writer.write(calls));
      }
    }
  }
});
const spans = OTLP_REQUESTS * SPANS_PER_REQUEST * ROUNDS;
printTable(`OTLP hot path, batches of ${(exportsPerBatch * SPANS_PER_REQUEST).toLocaleString("en")} spans, CPU µs per span (${spans.toLocaleString("en")} spans)`, [
  ...[...otlpTotals].map(([stage, micros]) => ({ stage, "µs per span": micros / spans })),
  { stage: "garbage collection in all (wall)", "µs per span": (otlpGcMillis * 1000) / spans },
]);
