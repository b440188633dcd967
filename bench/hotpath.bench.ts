/**
 * The calls ingest hot path in one thread, without HTTP or ClickHouse: CPU µs per part of
 * each stage an `upsert_batch` of 500 parts goes through (the calls bench's bodies). The
 * request thread: JSON parse, body validation, events, the log record; the log's consumer
 * thread: the record decoded, merged, RowBinary rows. Per-stage thread CPU, so the figures
 * hold on a loaded machine better than throughput does. `npx tsx bench/run.ts hotpath`
 * (BENCH_HOTPATH_REQUESTS=200 by default). A second table runs the log thread's part on
 * whole batches of BATCH_MAX_EVENTS, with V8's garbage collection time. A third table follows
 * the OTLP bench's protobuf exports (512 spans each) through the same stages, per span:
 * gunzip, decode, the spans' checks, the log record of the export event, then the consumer's
 * decode of the record, the export decoded again and mapped to call events, and the write, on
 * batches of BATCH_MAX_EVENTS spans (written in parts, as the worker does). The second and
 * third tables split the write by stage and table (`stagedWriter`), with the ClickHouse
 * client's own CPU; garbage collection is V8's wall time, spent inside the stages above it.
 */
import { CallCreateBatchReq, type UpsertBatchItem } from "../services/contract/calls.js";
import { checkCallCreateBatch } from "../services/contract/callsFastCheck.js";
import { idMaker, upsertEvents } from "../services/ingest/callEvents.js";
import { isOtlpExport, traceEventsTopic, type CallEvent, type OtlpExportEvent, type TraceEvent } from "../services/queue/events.js";
import { AFTER_CALL_BATCH, callEventParts, writeExports } from "../services/worker/callWorker.js";
import { mergeCallParts } from "../services/worker/callMerge.js";
import { recordCodecOf } from "../services/queue/durableLog/storage/recordCodec.js";
import { ClickHouseStore } from "../services/store/clickhouse.js";
import { callJsonTexts, CallsWriteRepository } from "../services/store/calls/callsWrite.js";
import { flattenCallRow } from "../services/store/calls/flatten.js";
import type { CallSnapshot } from "../services/store/calls/callRows.js";
import { CallBatchWriter, type CallsDerivedWriter } from "../services/worker/callBatchWriter.js";
import { checkJsonBytes, DEFAULT_JSON_MAX_DEPTH } from "../services/jsonBounds.js";
import { parseJsonBody } from "../services/jsonPieces.js";
import { PerformanceObserver } from "node:perf_hooks";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { DEFAULTS } from "../services/config.js";
import { printTable } from "./support.js";
import { PARTS_PER_REQUEST, realisticBatchBodies } from "./callBodies.js";
import { gunzipSync, gzipSync } from "node:zlib";
import { checkExport, decodedExport, mappedExport, otlpExportEvent } from "../services/otlp/exportEvent.js";
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

type Body = { batch: UpsertBatchItem[] };

/** The events as the route makes them (`upsertEvents`, ingest/callEvents.ts: an end joined with its start). */
const events = (body: Body): TraceEvent[] => upsertEvents(body.batch, "bench", idMaker(null, "call_upsert_batch")).events;

/** A store that answers lookups with nothing and drops inserts: only the worker's CPU is measured. */
const nullStore = { rows: async () => [], insert: async () => {}, insertRowBinary: async () => {} } as unknown as ClickHouseStore;
const writer = new CallBatchWriter(new CallsWriteRepository(nullStore));
const records = recordCodecOf(traceEventsTopic("bench"));
const texts = realisticBatchBodies("bench/hot", REQUESTS * PARTS_PER_REQUEST).map((body) => Buffer.from(body));
/** Writes a batch as the worker does (callWorker.ts). */
async function writeAll(events: readonly TraceEvent[]): Promise<void> {
  for (const part of callEventParts(events)) await writer.write(part);
}

const totals = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  for (const bytes of texts) {
    const array = timed(totals, "request: body bytes check (UTF-8, depth)", () => checkJsonBytes(bytes, DEFAULT_JSON_MAX_DEPTH));
    const parsed = timed(totals, "request: JSON parse (in pieces)", () => parseJsonBody(bytes, array));
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
 * The write of a batch is split by stage (stagedWriter): the merge, each table's rows (the
 * calls rows in JSON serialisation, leaves and RowBinary), the resources' tables, and the
 * ClickHouse client sending every query and insert of the batch to a sink that answers nothing.
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

/** The CPU of the synchronous part of `run` (what it does before its first wait) into `stage`. */
function syncPart<T>(totals: Map<string, number>, stage: string, run: () => T): T {
  return timed(totals, stage, run);
}

type Replay = (store: ClickHouseStore) => Promise<unknown>;

/** A store that answers every lookup with nothing and drops every write, keeping each call to replay it on a real client. */
function recordingStore(replays: Replay[]): ClickHouseStore {
  const store: Pick<ClickHouseStore, "rows" | "command" | "insert" | "insertRowBinary"> = {
    rows: async (operation, query) => (replays.push((s) => s.rows(operation, query)), []),
    command: async (operation, query) => void replays.push((s) => s.command(operation, query)),
    insert: async (operation, table, rows) => void replays.push((s) => s.insert(operation, table, rows)),
    insertRowBinary: async (operation, table, columns, rows, count) => void replays.push((s) => s.insertRowBinary(operation, table, columns, rows, count)),
  };
  return store as ClickHouseStore;
}

const STAGE = {
  merge: "consumer: merge (group, merge, lookups)",
  json: "consumer: calls rows, JSON serialisation",
  leaves: "consumer: calls rows, leaves (json_paths, json_values)",
  rowBinary: "consumer: calls rows, RowBinary",
  index: "consumer: call_index rows",
  client: "consumer: ClickHouse client (every query and insert, to a sink)",
} as const;
const callsRows = "calls rows (whole)";
const sortedRows = "consumer: calls rows put in sort key order";
const written = "written (whole)";

/** The worker's CallBatchWriter (callWorker.ts: the resources' writers after it) with the CPU of each stage of a write into `totals`. */
function stagedWriter(totals: Map<string, number>, sink: ClickHouseStore) {
  const replays: Replay[] = [];
  const store = recordingStore(replays);
  /** The calls whose rows `writeEvents`'s write made. */
  let merged: CallSnapshot[] = [];
  class StagedCallsRepository extends CallsWriteRepository {
    override insertSnapshots(snapshots: Parameters<CallsWriteRepository["insertSnapshots"]>[0]) {
      merged = [...merged, ...snapshots.map((s) => s.snapshot)];
      return syncPart(totals, callsRows, () => super.insertSnapshots(snapshots));
    }
    override insertIndex(snapshots: Parameters<CallsWriteRepository["insertIndex"]>[0]) {
      return syncPart(totals, STAGE.index, () => super.insertIndex(snapshots));
    }
    override insertRows(rows: Parameters<CallsWriteRepository["insertRows"]>[0]) {
      return syncPart(totals, sortedRows, () => super.insertRows(rows));
    }
  }
  const derived = AFTER_CALL_BATCH.map(({ resource, writer }): CallsDerivedWriter => {
    const made = writer({ store });
    return { write: (calls, deleted) => timedAsync(totals, `consumer: ${resource} (after each batch)`, () => made.write(calls, deleted)) };
  });
  const writer = new CallBatchWriter(new StagedCallsRepository(store), derived);
  const sendAll = () =>
    timedAsync(totals, STAGE.client, async () => {
      for (const replay of replays.splice(0)) await replay(sink);
    });
  /** A batch of OTLP exports as the worker writes it (callWorker.ts, `writeExports`). */
  const writeWhole = async (exports: readonly OtlpExportEvent[]): Promise<void> => {
    await timedAsync(totals, written, () => writeExports(writer, exports));
    await sendAll();
  };
  const writeEvents = async (events: readonly CallEvent[]): Promise<void> => {
    merged = [];
    await timedAsync(totals, written, () => writer.write(events));
    // The calls rows again, in their parts: the same functions the row writer calls.
    timed(totals, STAGE.json, () => merged.forEach(callJsonTexts));
    timed(totals, STAGE.leaves, () => merged.forEach(flattenCallRow));
    await sendAll();
  };
  return { writeEvents, writeWhole };
}

/** The staged totals as table rows: the write split into its stages (the merge what is left of it), per `unit`. */
function stageRows(totals: Map<string, number>, units: number, unit: string, gcMillis: number) {
  const get = (stage: string) => totals.get(stage) ?? 0;
  const resources = [...totals.keys()].filter((stage) => stage.endsWith("(after each batch)"));
  const byStage = new Map<string, number>();
  for (const [stage, micros] of totals) if (stage.startsWith("request:") || stage.startsWith("consumer: decode") || stage.startsWith("consumer: map")) byStage.set(stage, micros);
  byStage.set(STAGE.merge, get(written) - get(callsRows) - get(STAGE.index) - resources.reduce((n, r) => n + get(r), 0));
  byStage.set(STAGE.json, get(STAGE.json));
  byStage.set(STAGE.leaves, get(STAGE.leaves));
  byStage.set(STAGE.rowBinary, get(callsRows) - get(STAGE.json) - get(STAGE.leaves));
  closingStages(byStage, totals, resources, gcMillis);
  return [...byStage].map(([stage, micros]) => ({ stage, [`µs per ${unit}`]: micros / units }));
}

/** What follows a write's own stages in both tables: the index rows, the resources, the client; the consumer's total; the collections. */
function closingStages(byStage: Map<string, number>, totals: Map<string, number>, resources: readonly string[], gcMillis: number): void {
  const get = (stage: string) => totals.get(stage) ?? 0;
  byStage.set(STAGE.index, get(STAGE.index));
  for (const r of resources) byStage.set(r, get(r));
  byStage.set(STAGE.client, get(STAGE.client));
  const consumer = [...byStage].filter(([stage]) => stage.startsWith("consumer:")).reduce((n, [, micros]) => n + micros, 0);
  byStage.set("consumer: all of the above", consumer);
  byStage.set("garbage collection in all (wall)", gcMillis * 1000);
}

/** Parts of the write of whole calls, timed again apart from it (not counted in its total). */
const ALONE = {
  decode: "of which, timed apart: decode the exports again (protobuf)",
  map: "of which, timed apart: map spans to calls",
  json: "of which, timed apart: calls rows, JSON serialisation",
  leaves: "of which, timed apart: calls rows, leaves (json_paths, json_values)",
} as const;

/** The staged totals of `writeWhole` as table rows, per span: the write's rows made span by span, its parts timed apart below them. */
function wholeStageRows(totals: Map<string, number>, spans: number, gcMillis: number) {
  const get = (stage: string) => totals.get(stage) ?? 0;
  const resources = [...totals.keys()].filter((stage) => stage.endsWith("(after each batch)"));
  const byStage = new Map<string, number>();
  for (const [stage, micros] of totals) if (stage.startsWith("request:") || stage === "consumer: decode records") byStage.set(stage, micros);
  byStage.set("consumer: decode the exports again, map the spans, make their rows (span by span)", get(written) - get(sortedRows) - get(STAGE.index) - resources.reduce((n, r) => n + get(r), 0));
  byStage.set(sortedRows, get(sortedRows));
  closingStages(byStage, totals, resources, gcMillis);
  for (const stage of Object.values(ALONE)) byStage.set(stage, get(stage));
  return [...byStage].map(([stage, micros]) => ({ stage, "µs per span": micros / spans }));
}

/** An HTTP server in a process of its own that reads each request and answers 200 with nothing: the other end of the ClickHouse client. */
async function startSink(): Promise<{ store: ClickHouseStore; stop: () => void }> {
  const child = spawn(process.execPath, ["-e", `const s = require("node:http").createServer((q, a) => { q.resume(); q.on("end", () => a.end()); }); s.listen(0, "127.0.0.1", () => console.log(s.address().port));`], { stdio: ["ignore", "pipe", "inherit"] });
  const [port] = (await once(child.stdout!, "data")) as [Buffer];
  return { store: new ClickHouseStore(`http://127.0.0.1:${port.toString().trim()}`, "bench"), stop: () => child.kill() };
}

const sink = await startSink();
const encoded = texts.map((bytes) => records.encode(events(checkCallCreateBatch(JSON.parse(bytes.toString("utf8"))) as Body)));
const recordsPerBatch = Math.max(1, Math.round(batchEvents / PARTS_PER_REQUEST));
const batchTotals = new Map<string, number>();
const writeParts = stagedWriter(batchTotals, sink.store).writeEvents;
const gcMillis = await gcMillisDuring(async () => {
  for (let round = 0; round < ROUNDS; round++) {
    for (let from = 0; from < encoded.length; from += recordsPerBatch) {
      const batch = timed(batchTotals, "consumer: decode records", () => encoded.slice(from, from + recordsPerBatch).flatMap((r) => records.decode(r).messages));
      for (const part of callEventParts(batch)) await writeParts(part);
    }
  }
});
printTable(`Log thread, batches of ${(recordsPerBatch * PARTS_PER_REQUEST).toLocaleString("en")} parts, CPU µs per part (${parts.toLocaleString("en")} parts)`, stageRows(batchTotals, parts, "part", gcMillis));

const OTLP_REQUESTS = Number(process.env.BENCH_HOTPATH_OTLP_REQUESTS ?? 100);
const exports = Array.from({ length: OTLP_REQUESTS }, (_, n) => gzipSync(protobufRequest(requestSpans(n))));
const otlpSource = { project_id: "bench/hot", wb_user_id: "bench", format: "protobuf", maxSpanBytes: 1 << 20 } as const;
const exportsPerBatch = Math.max(1, Math.round(batchEvents / SPANS_PER_REQUEST));
const otlpTotals = new Map<string, number>();
const writeSpans = stagedWriter(otlpTotals, sink.store);
const otlpGcMillis = await gcMillisDuring(async () => {
  for (let round = 0; round < ROUNDS; round++) {
    for (let from = 0; from < exports.length; from += exportsPerBatch) {
      const logged = exports.slice(from, from + exportsPerBatch).map((body) => {
        const bytes = timed(otlpTotals, "request: gunzip", () => gunzipSync(body));
        const checked = timed(otlpTotals, "request: check spans (read without text)", () => checkExport({ ...otlpSource, body: bytes }));
        const event = timed(otlpTotals, "request: export event", () => otlpExportEvent({ ...otlpSource, body: bytes }, checked)!);
        return timed(otlpTotals, "request: log record", () => records.encode([event]));
      });
      const batch = timed(otlpTotals, "consumer: decode records", () => logged.flatMap((r) => records.decode(r).messages)).filter(isOtlpExport);
      await writeSpans.writeWhole(batch);
    }
  }
});
sink.stop();
// What the write did span by span, again in parts, after it: the same functions it calls.
for (let round = 0; round < ROUNDS; round++) {
  for (const body of exports) {
    const event = otlpExportEvent({ ...otlpSource, body: gunzipSync(body) }, { accepted: SPANS_PER_REQUEST, firstAcceptedId: "0", rejected: 0, errors: [] })!;
    const spans = timed(otlpTotals, ALONE.decode, () => decodedExport(event));
    const calls = timed(otlpTotals, ALONE.map, () => mappedExport(event, spans)).map((call) => mergeCallParts(null, [call]).snapshot!);
    timed(otlpTotals, ALONE.json, () => calls.forEach(callJsonTexts));
    timed(otlpTotals, ALONE.leaves, () => calls.forEach(flattenCallRow));
  }
}
const spans = OTLP_REQUESTS * SPANS_PER_REQUEST * ROUNDS;
printTable(`OTLP hot path, batches of ${(exportsPerBatch * SPANS_PER_REQUEST).toLocaleString("en")} spans, CPU µs per span (${spans.toLocaleString("en")} spans)`, wholeStageRows(otlpTotals, spans, otlpGcMillis));
