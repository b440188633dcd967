/**
 * Calls pipeline benchmarks (issue: calls pipeline). Prints:
 * - ingest throughput: upsert_batch of 500 parts as SDKs send them (bench/callBodies.ts,
 *   realisticBatchBodies), 8 concurrent clients, acknowledged and queryable, with the ratios
 *   to clickhouse-client inserting the same rows from a file and to the raw reference
 *   (standardInsertRate, support.ts);
 * - single /call/start at 500 requests/s: p50/p99 acknowledgement latency, embedded (the
 *   durable log) and Kafka;
 * - reads over 1,000,000 calls in one project, with the ratio to the bare SQL;
 * - the service's peak RSS while ingesting.
 */
import autocannon from "autocannon";
import { startMockKafka } from "../test/support/mockKafka.js";
import type { LocalClickHouse } from "../services/store/localServer.js";
import { BENCH_AUTH, BENCH_PROCESSES, childPids, clickhouseClient, keptAlivePoster, clickhouseClientInsertRate, clickhouseClientMs, standardColumns, standardInsertRate, countCalls, CpuMeter, sendAllRetrying, startBenchClickHouse, printClickHouseWork, printCpuTable, printTable, sampleServiceRss, spawnService, stats, timeIt, warmLoadGenerator, type ServiceProcess } from "./support.js";
import { iso, PARTS_PER_REQUEST, realisticBatchBodies, T0 } from "./callBodies.js";
import { quoteString } from "../services/store/sql.js";

const CLIENTS = 8;
const INGEST_REQUESTS = Number(process.env.BENCH_INGEST_REQUESTS ?? 800);
const QUERY_CALLS = Number(process.env.BENCH_QUERY_CALLS ?? 1_000_000);
/** BENCH_SECTIONS=ingest,latency,reads (the default): which figures to measure. */
const SECTIONS = (process.env.BENCH_SECTIONS ?? "ingest,latency,reads").split(",");

const post = (url: string, path: string, body: string | Uint8Array<ArrayBuffer>) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: BENCH_AUTH }, body });

async function ingest(service: ServiceProcess, project: string) {
  // As SDKs send them (UUIDv7 and random ids, traces of one to four calls, some ended a request later).
  const bodies = realisticBatchBodies(project, INGEST_REQUESTS * PARTS_PER_REQUEST);
  const rss = sampleServiceRss(service.pid);
  const meter = new CpuMeter(service.pid, childPids("clickhouse")[0] ?? null);
  const send = keptAlivePoster(service.url, CLIENTS);
  const headers = { "content-type": "application/json", authorization: BENCH_AUTH };
  const started = performance.now();
  await sendAllRetrying({ post: send, path: "/call/upsert_batch", headers, bodies, senders: CLIENTS });
  const acked = performance.now();
  const calls = (INGEST_REQUESTS * PARTS_PER_REQUEST) / 2;
  while ((await countCalls(service.url, project)) < calls) await new Promise((r) => setTimeout(r, 50));
  const queryable = performance.now();
  const peakRss = rss.stop();
  return { parts: calls * 2, ackSeconds: (acked - started) / 1000, queryableSeconds: (queryable - started) / 1000, peakRss, cpu: meter.read() };
}

/** Open-loop load at a fixed rate over a bounded pool of kept-alive connections (autocannon). */
async function startLatency(service: ServiceProcess, project: string, rate: number, seconds: number) {
  let n = 0;
  const result = await autocannon({
    url: `${service.url}/call/start`,
    method: "POST",
    connections: 64,
    overallRate: rate,
    duration: seconds,
    headers: { "content-type": "application/json", authorization: BENCH_AUTH },
    requests: [
      {
        setupRequest: (req) => {
          const i = n++;
          const body = { start: { project_id: project, id: `lat-${i}`, op_name: "op", trace_id: `t${i}`, started_at: iso(T0 * 1000 + i), attributes: {}, inputs: { i } } };
          return { ...req, body: JSON.stringify(body) };
        },
      },
    ],
  });
  // Not `requests.sent`: autocannon counts the rate once more in it at the start.
  return { p50: result.latency.p50, p99: result.latency.p99, ok: result["2xx"], failed: result.non2xx + result.errors };
}

async function seedQueryCalls(ch: LocalClickHouse, database: string, project: string): Promise<void> {
  const sql = `INSERT INTO calls (project_id, id, trace_id, parent_id, op_name, started_at, ended_at, attributes, inputs, output, summary, wb_user_id, json_paths, json_values, storage_size_bytes, version)
    SELECT ${quoteString(project)}, concat('q', toString(number)), concat('t', toString(intDiv(number, 10))),
      if(number % 10 = 0, NULL, concat('q', toString(number - number % 10))),
      concat('weave:///bench/query/op/step', toString(number % 20), ':v1'),
      ${T0 * 1000} + number * 1000, ${T0 * 1000} + number * 1000 + 500000,
      '{"env":"bench"}', concat('{"n":', toString(number), ',"category":"c', toString(number % 50), '","question":"what is the answer to question ', toString(number), '?"}'),
      '{"answer":42}', '{"usage":{"gpt-4o-mini":{"prompt_tokens":12,"completion_tokens":5,"requests":1}}}', 'bench',
      ['attributes.env', 'inputs.n', 'inputs.category', 'inputs.question', 'output.answer', 'summary.usage.gpt-4o-mini.prompt_tokens', 'summary.usage.gpt-4o-mini.completion_tokens', 'summary.usage.gpt-4o-mini.requests'],
      ['bench', toString(number), concat('c', toString(number % 50)), concat('what is the answer to question ', toString(number), '?'), '42', '12', '5', '1'],
      200, 2000000000000000
    FROM numbers(${QUERY_CALLS})`;
  clickhouseClient(ch, sql, { database });
  clickhouseClient(ch, "OPTIMIZE TABLE calls FINAL", { database });
}

async function queries(service: ServiceProcess, ch: LocalClickHouse, database: string, project: string) {
  const desc = [{ field: "started_at", direction: "desc" }];
  const cases: { name: string; body: object; sql: string; path?: string }[] = [
    {
      name: "first page, started_at desc",
      body: { project_id: project, limit: 100, sort_by: desc },
      sql: `SELECT * FROM calls FINAL WHERE project_id = ${quoteString(project)} ORDER BY started_at DESC LIMIT 100`,
    },
    {
      name: "same, op_names filter",
      body: { project_id: project, limit: 100, sort_by: desc, filter: { op_names: ["weave:///bench/query/op/step7:v1"] } },
      sql: `SELECT * FROM calls FINAL WHERE project_id = ${quoteString(project)} AND op_name = 'weave:///bench/query/op/step7:v1' ORDER BY started_at DESC LIMIT 100`,
    },
    {
      name: "same, $expr on inputs.category",
      body: { project_id: project, limit: 100, sort_by: desc, query: { $expr: { $eq: [{ $getField: "inputs.category" }, { $literal: "c7" }] } } },
      sql: `SELECT * FROM calls FINAL WHERE project_id = ${quoteString(project)} AND json_values[indexOf(json_paths, 'inputs.category')] = 'c7' ORDER BY started_at DESC LIMIT 100`,
    },
    {
      name: "query_stats count",
      path: "/calls/query_stats",
      body: { project_id: project },
      sql: `SELECT count() FROM calls FINAL WHERE project_id = ${quoteString(project)}`,
    },
  ];
  const rows = [];
  for (const c of cases) {
    const ours = stats(await timeIt(20, async () => {
      const res = await post(service.url, c.path ?? "/calls/stream_query", JSON.stringify(c.body));
      if (res.status !== 200) throw new Error(`${c.name}: ${res.status} ${await res.text()}`);
      await res.text();
    }));
    const bare = stats(clickhouseClientMs(ch.tcpPort, database, c.sql, 10));
    rows.push({ query: c.name, "p50 ms": ours.p50, "p99 ms": ours.p99, "bare SQL p50 ms": bare.p50, "ours ÷ bare": (ours.p50 / bare.p50).toFixed(3) });
  }
  return rows;
}

async function ingestSection(env: Record<string, string>, ch: LocalClickHouse, database: string): Promise<void> {
  const embedded = await spawnService(env);
  const ingestResult = await ingest(embedded, "bench/ingest");
  await embedded.stop();
  const clientRowsPerSecond = clickhouseClientInsertRate(ch, database, "bench/ingest");
  const reference = standardInsertRate(ch);
  const ourCallsPerSecond = ingestResult.parts / 2 / ingestResult.queryableSeconds;
  printTable(`Ingest: upsert_batch, ${PARTS_PER_REQUEST} parts/request, ${CLIENTS} clients (embedded mode, the durable log, PROCESSES=${BENCH_PROCESSES})`, [{
    parts: ingestResult.parts,
    "acked parts/s": ingestResult.parts / ingestResult.ackSeconds,
    "queryable parts/s": ingestResult.parts / ingestResult.queryableSeconds,
    "clickhouse-client rows/s": clientRowsPerSecond,
    "ratio (our calls/s ÷ client rows/s)": (ourCallsPerSecond / clientRowsPerSecond).toFixed(3),
    ...standardColumns(reference),
    "queryable parts/s ÷ raw reference": (ingestResult.parts / ingestResult.queryableSeconds / reference.rowsPerSecond).toFixed(3),
    "peak RSS MB (all processes)": ingestResult.peakRss,
  }]);
  printCpuTable(ingestResult.cpu, ingestResult.queryableSeconds, ingestResult.parts, "part");
  printClickHouseWork(ch, database, ingestResult.parts, "part");
}

async function latencySection(env: Record<string, string>, brokers: string): Promise<void> {
  await warmLoadGenerator();
  const embedded = await spawnService(env);
  const embeddedLatency = await startLatency(embedded, "bench/latency", 500, 6);
  await embedded.stop();
  const viaKafka = await spawnService({ ...env, KAFKA_BROKERS: brokers, KAFKA_TOPIC: "bench-latency", BATCH_MAX_WAIT_MS: "200" });
  const kafkaLatency = await startLatency(viaKafka, "bench/latency-kafka", 500, 6);
  await viaKafka.stop();
  printTable("Single /call/start at 500 requests/s for 6 s: acknowledgement latency", [
    { mode: "embedded log (acked = synced to the log)", "p50 ms": embeddedLatency.p50, "p99 ms": embeddedLatency.p99, "2xx": embeddedLatency.ok, "non-2xx or errors": embeddedLatency.failed },
    { mode: "Kafka (acked = acks=all)", "p50 ms": kafkaLatency.p50, "p99 ms": kafkaLatency.p99, "2xx": kafkaLatency.ok, "non-2xx or errors": kafkaLatency.failed },
  ]);
}

async function main() {
  const bench = await startBenchClickHouse("calls");
  const { ch, dir } = bench;
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  const kafka = await startMockKafka();
  const database = "bench";
  try {
    const env = { CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: database, DATA_DIR: dir };
    if (SECTIONS.includes("ingest")) await ingestSection(env, ch, database);
    if (SECTIONS.includes("latency")) await latencySection(env, kafka.brokers);
    if (SECTIONS.includes("reads")) {
      const reader = await spawnService(env); // migrates the schema first
      await seedQueryCalls(ch, database, "bench/query");
      printTable(`Reads over ${QUERY_CALLS.toLocaleString("en")} calls in one project (20 runs, HTTP end to end)`, await queries(reader, ch, database, "bench/query"));
      await reader.stop();
    }
  } finally {
    await kafka.stop();
    await bench.stop();
  }
}

await main();
