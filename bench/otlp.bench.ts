/**
 * OTLP ingest benchmarks (issue: OTLP trace ingestion). Prints:
 * - end to end: protobuf exports of 512 spans each, gzip, from 8 concurrent exporters to
 *   `/otel/v1/traces` of the service running as its own process (embedded queue, local
 *   ClickHouse): spans/s accepted (answered 200; a 429 or 503 is retried after its
 *   `Retry-After`, as the exporters do) and spans/s until queryable
 *   (`/calls/query_stats` counts them all), with the ratio to clickhouse-client inserting
 *   the same stored rows from a file, and where the CPU went;
 * - OTLP/gRPC and OTLP/JSON beside it, in the same run: the same exports, each transport to a
 *   service of its own with a database of its own on the same ClickHouse, so that none starts
 *   on a table, a log or heaps the one before filled; gRPC over `TraceService/Export` on
 *   OTLP_GRPC_PORT from 8 gRPC clients (a connection each, messages gzip-compressed by
 *   grpc-js; a RESOURCE_EXHAUSTED or UNAVAILABLE retried after its RetryInfo delay, as the
 *   Collector does), JSON as the OTel JS SDK sends it: spans/s accepted and queryable, each as
 *   a ratio to OTLP/HTTP's, and each run's CPU;
 * - decode cost alone, in this process: µs per span to decode protobuf and OTLP/JSON
 *   bodies of the same spans, to map them to call events, and to gunzip.
 *
 * Bodies are pre-encoded with protobufjs from the vendored proto (`proto/`), every request
 * with its own trace and span ids. Sizes: BENCH_OTLP_REQUESTS (default 400 requests).
 * BENCH_SECTIONS=decode,e2e (the default): `decode` alone skips the end-to-end run.
 * CLICKHOUSE_LOG_QUERIES=1: also ClickHouse's CPU per span by query, and its merges.
 */
import { mkdirSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { decodeJsonRequest, decodeProtobufRequest, encodeExportResponse } from "../services/otlp/decode.js";
import { mapSpans } from "../services/otlp/mapSpan.js";
import { jsonRequest, protobufRequest, requestSpans, SPANS_PER_REQUEST } from "./otlpSpans.js";
import { errorDetails, exportClient } from "../test/otlp/grpcSupport.js";
import { BENCH_AUTH, BENCH_PROCESSES, childPids, clickhouseClient, keptAlivePoster, clickhouseClientInsertRate, standardColumns, standardInsertRate, countCalls, CpuMeter, sendAllRetrying, startBenchClickHouse, printClickHouseWork, printCpuTable, printTable, sampleServiceRss, spawnService, type ServiceProcess } from "./support.js";
import { quoteString } from "../services/store/sql.js";

const EXPORTERS = 8;
const REQUESTS = Number(process.env.BENCH_OTLP_REQUESTS ?? 400);
const DECODE_REQUESTS = Math.min(REQUESTS, 40);
const PROJECT = "bench/otlp";
const GRPC_PROJECT = "bench/otlp-grpc";
const JSON_PROJECT = "bench/otlp-json";
const SECTIONS = (process.env.BENCH_SECTIONS ?? "decode,e2e").split(",");
/**
 * One transport's run: `send` sends every body (answering how many refusals it retried), then
 * the run waits until the project counts all their spans; its times, the service's peak RSS
 * and where the CPU went.
 */
async function measuredRun(service: ServiceProcess, clickhousePid: number | null, project: string, bodies: Buffer[], send: () => Promise<number>) {
  const rss = sampleServiceRss(service.pid);
  const meter = new CpuMeter(service.pid, clickhousePid);
  const started = performance.now();
  const retries = await send();
  const accepted = performance.now();
  const total = bodies.length * SPANS_PER_REQUEST;
  while ((await countCalls(service.url, project)) < total) await new Promise((r) => setTimeout(r, 50));
  const queryable = performance.now();
  const peakRss = rss.stop();
  const cpu = meter.read();
  return { total, acceptedSeconds: (accepted - started) / 1000, queryableSeconds: (queryable - started) / 1000, retries, peakRss, cpu };
}

/** The exports over OTLP/HTTP, gzip, from EXPORTERS senders: protobuf, or OTLP/JSON (`json`) into a project of its own. */
function sendAll(service: ServiceProcess, clickhousePid: number | null, bodies: Buffer[], json = false) {
  const project = json ? JSON_PROJECT : PROJECT;
  const headers = { "content-type": json ? "application/json" : "application/x-protobuf", "content-encoding": "gzip", authorization: BENCH_AUTH, project_id: project };
  const fullSuccess = Buffer.from(encodeExportResponse(json ? "json" : "protobuf"));
  return measuredRun(service, clickhousePid, project, bodies, () =>
    sendAllRetrying({
      post: keptAlivePoster(service.url, EXPORTERS),
      path: "/otel/v1/traces",
      headers,
      bodies,
      senders: EXPORTERS,
      check: (answer) => {
        if (!answer.body.equals(fullSuccess)) throw new Error(`partial success: ${answer.body.toString()}`);
      },
    }),
  );
}

/**
 * The same exports over OTLP/gRPC, from EXPORTERS clients with a connection each, gzip; a
 * refusal to retry (RetryInfo) waits its delay, anything else fails the bench.
 */
function sendAllGrpc(service: ServiceProcess, clickhousePid: number | null, bodies: Buffer[]) {
  const metadata = { authorization: BENCH_AUTH, project_id: GRPC_PROJECT };
  return measuredRun(service, clickhousePid, GRPC_PROJECT, bodies, async () => {
    const clients = Array.from({ length: EXPORTERS }, () => exportClient(service.otlpGrpcUrl!, "traces", { gzip: true, ownConnection: true }));
    let next = 0;
    let retries = 0;
    await Promise.all(
      clients.map(async (client) => {
        while (next < bodies.length) {
          const body = bodies[next++]!;
          for (;;) {
            const answer = await client.export(body, metadata);
            if (answer.ok) {
              if (answer.response.length > 0) throw new Error("partial success over gRPC");
              break;
            }
            const delay = errorDetails(answer.error)?.retryDelaySeconds ?? null;
            if (delay === null) throw new Error(`OTLP/gRPC answered ${answer.error.code}: ${answer.error.details}`);
            retries++;
            await new Promise((r) => setTimeout(r, delay * 1000));
          }
        }
      }),
    );
    for (const client of clients) client.close();
    return retries;
  });
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
  const requests = SECTIONS.includes("e2e") ? REQUESTS : DECODE_REQUESTS;
  console.log(`pre-encoding ${requests} requests of ${SPANS_PER_REQUEST} spans (${cpus().length} cores)…`);
  const pbBodies: Buffer[] = [];
  const gzBodies: Buffer[] = [];
  /** Every request's protobuf, for OTLP/gRPC (grpc-js compresses each message itself). */
  const grpcBodies: Buffer[] = [];
  const jsonBodies: Buffer[] = [];
  /** Every request as OTLP/JSON, gzip, as the OTel JS SDK's OTLP/HTTP exporter sends it by default. */
  const gzJsonBodies: Buffer[] = [];
  for (let r = 0; r < requests; r++) {
    const spans = requestSpans(r);
    const pb = protobufRequest(spans);
    gzBodies.push(gzipSync(pb));
    if (SECTIONS.includes("e2e")) {
      grpcBodies.push(pb);
      gzJsonBodies.push(gzipSync(jsonRequest(spans)));
    }
    if (r < DECODE_REQUESTS) {
      pbBodies.push(pb);
      jsonBodies.push(jsonRequest(spans));
    }
  }

  if (SECTIONS.includes("decode")) {
    printTable(`Decode cost alone (in process, ${DECODE_REQUESTS} requests × ${SPANS_PER_REQUEST} spans, median of 5 rounds)`, decodeCosts(pbBodies, jsonBodies, gzBodies.slice(0, DECODE_REQUESTS)));
  }
  if (!SECTIONS.includes("e2e")) return;

  const bench = await startBenchClickHouse("otlp");
  const { ch, dir } = bench;
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  const database = "bench";
  try {
    const clickhousePid = childPids("clickhouse")[0] ?? null;
    /** A service of its own for one transport's run, with a database and a log of its own. */
    const onOwnService = async <R>(name: string, run: (service: ServiceProcess) => Promise<R>): Promise<R> => {
      const dataDir = join(dir, name);
      mkdirSync(dataDir);
      const service = await spawnService({ CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: name, DATA_DIR: dataDir });
      try {
        return await run(service);
      } finally {
        await service.stop();
      }
    };
    const result = await onOwnService(database, (service) => sendAll(service, clickhousePid, gzBodies));
    // Before the other transports' runs: what ClickHouse did for the protobuf spans alone.
    printClickHouseWork(ch, database, result.total, "span");
    const grpc = await onOwnService(`${database}_grpc`, (service) => sendAllGrpc(service, clickhousePid, grpcBodies));
    const json = await onOwnService(`${database}_json`, (service) => sendAll(service, clickhousePid, gzJsonBodies, true));
    const clientRowsPerSecond = clickhouseClientInsertRate(ch, database, PROJECT, { table: "calls_copy_otlp", create: ["CREATE TABLE calls_copy_otlp AS calls"] });
    const reference = standardInsertRate(ch);
    const queryableRate = result.total / result.queryableSeconds;
    printTable(`OTLP ingest end to end: ${REQUESTS} protobuf exports × ${SPANS_PER_REQUEST} spans, gzip, ${EXPORTERS} concurrent exporters (embedded queue, PROCESSES=${BENCH_PROCESSES})`, [{
      spans: result.total,
      "accepted spans/s": result.total / result.acceptedSeconds,
      "queryable spans/s": queryableRate,
      "clickhouse-client rows/s": clientRowsPerSecond,
      "ratio (queryable ÷ client)": (queryableRate / clientRowsPerSecond).toFixed(3),
      ...standardColumns(reference),
      "queryable ÷ raw reference": (queryableRate / reference.rowsPerSecond).toFixed(3),
      "429/503 retries": result.retries,
      "peak RSS MB": result.peakRss,
    }]);
    printCpuTable(result.cpu, result.queryableSeconds, result.total, "span");
    const transports = [
      { transport: "OTLP/HTTP (above)", ...result },
      { transport: "OTLP/gRPC", ...grpc },
      { transport: "OTLP/HTTP JSON", ...json },
    ];
    const perSpan = (seconds: number, spans: number) => ((seconds * 1e6) / spans).toFixed(1);
    printTable(`OTLP/gRPC and OTLP/JSON beside OTLP/HTTP protobuf: the same ${REQUESTS} exports × ${SPANS_PER_REQUEST} spans, gzip, ${EXPORTERS} concurrent exporters, one after the other, each to a service and a database of its own`, transports.map((t) => ({
      transport: t.transport,
      "accepted spans/s": t.total / t.acceptedSeconds,
      "queryable spans/s": t.total / t.queryableSeconds,
      "accepted ÷ HTTP's": ((t.total / t.acceptedSeconds) / (result.total / result.acceptedSeconds)).toFixed(3),
      "queryable ÷ HTTP's": ((t.total / t.queryableSeconds) / (result.total / result.queryableSeconds)).toFixed(3),
      "refusals retried": t.retries,
      "service / ClickHouse CPU µs per span": `${perSpan(t.cpu.service, t.total)} / ${perSpan(t.cpu.clickhouse, t.total)}`,
      "peak RSS MB": t.peakRss,
    })));
    const sizes = clickhouseClient(ch,
      `SELECT avg(length(attributes)), avg(length(otel_dump)), avg(length(inputs)) + avg(length(ifNull(output, ''))), avg(length(json_paths)) FROM calls WHERE project_id = ${quoteString(PROJECT)} FORMAT TSV`, { database });
    const [attributes, otelDump, io, leaves] = sizes.stdout.trim().split("\t").map(Number);
    printTable("Stored row, average per span", [{ "attributes chars": attributes ?? 0, "otel_dump chars": otelDump ?? 0, "inputs+output chars": io ?? 0, "json_paths leaves": leaves ?? 0 }]);
  } finally {
    await bench.stop();
  }
}

await main();
