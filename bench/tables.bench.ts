/**
 * Tables benchmark (issue 9, "Speed"). Run: `npx tsx bench/run.ts tables` (or `make bench`).
 *
 * Starts its own ClickHouse and a service process, then creates one table of
 * BENCH_TABLE_ROWS rows (100,000 by default) of ~1 KB each the way the Weave Python client
 * sends a large table: rows cut into chunks of ~10 MB of row text, each chunk a
 * `/table/create` (BENCH_TABLE_PARALLEL of them in flight, 4 by default), then one
 * `/table/create_from_digests` joining the chunks' row digests (with `expected_digest`).
 * Prints rows/s, the service's peak RSS and where the CPU went.
 *
 * Then times, over 20 runs each, `/table/query` pages of 100 rows of that table: sorted by a
 * numeric row field, by a text row field (first page and a page in the middle), and in table
 * order; and one `/table/query_stream` of the whole table with the service's peak RSS while
 * it streams (the answer is ~the table's size; the service holds one batch of rows).
 */
import { tableDigest } from "../services/digests.js";
import { ClickHouseStore } from "../services/store/clickhouse.js";
import { ensureDatabase } from "../services/store/migrations.js";
import { BENCH_AUTH, childPids, CpuMeter, printCpuTable, printTable, sampleServiceRss, spawnService, startBenchClickHouse, stats, timeIt, type ServiceProcess } from "./support.js";
import { quoteString } from "../services/store/sql.js";

const ROWS = Number(process.env.BENCH_TABLE_ROWS ?? 100_000);
const PARALLEL = Number(process.env.BENCH_TABLE_PARALLEL ?? 4);
/** The Python client's target chunk size (weave/trace/table_upload_chunking.py: TARGET_CHUNK_BYTES). */
const CHUNK_BYTES = 10 * 1024 * 1024;
const RUNS = 20;
const PROJECT = "bench/tables";
const DATABASE = "bench_tables";

const WORDS = ["what", "is", "the", "capital", "of", "france", "paris", "model", "answer", "question", "table", "row", "digest", "score", "evaluate", "dataset", "prompt", "token", "context", "reason"];

/** A deterministic pseudo-random word sequence, so rows differ and compress like text. */
function text(seed: number, chars: number): string {
  let out = "";
  let x = seed * 2654435761 + 1;
  while (out.length < chars) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out += `${WORDS[x % WORDS.length]!}${x % 7 === 0 ? `-${x % 1000}` : ""} `;
  }
  return out.slice(0, chars);
}

/** Row i, ~1 KB of JSON. */
function rowText(i: number): string {
  const row = {
    id: `example-${i}`,
    question: text(i, 430),
    answer: text(i + 7_777_777, 430),
    score: ((i * 7919) % 100_003) / 1000,
    difficulty: i % 5,
    category: `category-${i % 23}`,
    tags: [`t${i % 3}`, `t${i % 11}`],
  };
  return JSON.stringify(row);
}

/** Rows cut as the Python client cuts them: a new chunk once the next row would pass CHUNK_BYTES. */
function chunkRanges(): { from: number; to: number }[] {
  const ranges: { from: number; to: number }[] = [];
  let from = 0;
  let bytes = 0;
  for (let i = 0; i < ROWS; i++) {
    const size = Buffer.byteLength(rowText(i));
    if (bytes + size > CHUNK_BYTES && i > from) {
      ranges.push({ from, to: i });
      from = i;
      bytes = 0;
    }
    bytes += size;
  }
  if (from < ROWS) ranges.push({ from, to: ROWS });
  return ranges;
}

async function post<T>(service: ServiceProcess, path: string, body: string): Promise<T> {
  const res = await fetch(`${service.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: BENCH_AUTH }, body });
  const answer = await res.text();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${answer.slice(0, 500)}`);
  return JSON.parse(answer) as T;
}

interface Created {
  digest: string;
  seconds: number;
  chunks: number;
  bodyBytes: number;
}

async function createTable(service: ServiceProcess): Promise<Created> {
  const ranges = chunkRanges();
  const digestsOfChunk: string[][] = new Array<string[]>(ranges.length);
  let bodyBytes = 0;
  let next = 0;
  const t = performance.now();
  const worker = async () => {
    while (next < ranges.length) {
      const k = next++;
      const { from, to } = ranges[k]!;
      const rows: string[] = [];
      for (let i = from; i < to; i++) rows.push(rowText(i));
      const body = `{"table":{"project_id":"${PROJECT}","rows":[${rows.join(",")}]}}`;
      bodyBytes += body.length;
      digestsOfChunk[k] = (await post<{ row_digests: string[] }>(service, "/table/create", body)).row_digests;
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  const rowDigests = digestsOfChunk.flat();
  const body = JSON.stringify({ project_id: PROJECT, row_digests: rowDigests, expected_digest: tableDigest(rowDigests) });
  bodyBytes += body.length;
  const { digest } = await post<{ digest: string }>(service, "/table/create_from_digests", body);
  return { digest, seconds: (performance.now() - t) / 1000, chunks: ranges.length, bodyBytes };
}

async function timeQuery(service: ServiceProcess, query: Record<string, unknown>): Promise<{ p50: number; p99: number; rows: number }> {
  const body = JSON.stringify({ project_id: PROJECT, ...query });
  let rows = 0;
  const samples = await timeIt(RUNS, async () => {
    rows = (await post<{ rows: unknown[] }>(service, "/table/query", body)).rows.length;
  });
  const { p50, p99 } = stats(samples);
  return { p50, p99, rows };
}

async function streamWhole(service: ServiceProcess, digest: string): Promise<{ seconds: number; rows: number; megabytes: number; peakRss: number }> {
  const rss = sampleServiceRss(service.pid);
  const t = performance.now();
  const res = await fetch(`${service.url}/table/query_stream`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: BENCH_AUTH },
    body: JSON.stringify({ project_id: PROJECT, digest, sort_by: [{ field: "score", direction: "asc" }] }),
  });
  if (res.status !== 200 || !res.body) throw new Error(`query_stream answered ${res.status}`);
  let bytes = 0;
  let rows = 0;
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    bytes += chunk.byteLength;
    for (const c of decoder.decode(chunk, { stream: true })) if (c === "\n") rows++;
  }
  return { seconds: (performance.now() - t) / 1000, rows, megabytes: bytes / 1e6, peakRss: rss.stop() };
}

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("tables");
  const { ch, dir } = bench;
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  await ensureDatabase(ch.url, DATABASE);
  const service = await spawnService({ CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: DATABASE, DATA_DIR: dir });
  const store = new ClickHouseStore(ch.url, DATABASE);
  try {
    const rss = sampleServiceRss(service.pid);
    const meter = new CpuMeter(service.pid, childPids("clickhouse")[0] ?? null);
    const created = await createTable(service);
    const cpu = meter.read();
    const peakRss = rss.stop();
    const { count } = await post<{ count: number }>(service, "/table/query_stats", JSON.stringify({ project_id: PROJECT, digest: created.digest }));
    if (count !== ROWS) throw new Error(`the table has ${count} rows, expected ${ROWS}`);
    printTable(`table/create of ${ROWS.toLocaleString("en")} rows of ~1 KB (${created.chunks} chunks of ~10 MB, ${PARALLEL} in flight, then create_from_digests)`, [{
      rows: ROWS,
      "MB sent": created.bodyBytes / 1e6,
      seconds: created.seconds,
      "rows/s": ROWS / created.seconds,
      "peak service RSS MB": peakRss,
    }]);
    printCpuTable(cpu, created.seconds, ROWS, "row");

    const [sizes] = await store.rows<{ rows: string; leaves: string; bytes: string }>("bench_sizes", {
      sql: `SELECT (SELECT toString(count()) FROM table_rows) AS rows, (SELECT toString(count()) FROM table_row_leaves) AS leaves,
              (SELECT toString(sum(bytes)) FROM system.parts WHERE active AND database = ${quoteString(DATABASE)} AND table LIKE 'table%') AS bytes`,
      params: {},
    });
    printTable("Stored", [{ "table_rows": Number(sizes!.rows), "table_row_leaves": Number(sizes!.leaves), "MB on disk (tables module)": Number(sizes!.bytes) / 1e6 }]);

    const mid = Math.floor(ROWS / 2);
    const cases: { name: string; query: Record<string, unknown> }[] = [
      { name: "sorted by score desc (number), first page", query: { sort_by: [{ field: "score", direction: "desc" }], limit: 100 } },
      { name: "sorted by question asc (text), first page", query: { sort_by: [{ field: "question", direction: "asc" }], limit: 100 } },
      { name: `sorted by score asc, offset ${mid}`, query: { sort_by: [{ field: "score", direction: "asc" }], limit: 100, offset: mid } },
      { name: "sorted by category, then score desc", query: { sort_by: [{ field: "category", direction: "asc" }, { field: "score", direction: "desc" }], limit: 100 } },
      { name: `table order, offset ${mid}`, query: { limit: 100, offset: mid } },
    ];
    const rows: Record<string, string | number>[] = [];
    for (const c of cases) {
      const r = await timeQuery(service, { digest: created.digest, ...c.query });
      rows.push({ "table/query page of 100": c.name, "p50 ms": r.p50, "p99 ms": r.p99, rows: r.rows });
    }
    printTable(`table/query on the ${ROWS.toLocaleString("en")}-row table over HTTP (${RUNS} runs; goal p50 ≤ 200 ms)`, rows);

    const whole = await streamWhole(service, created.digest);
    printTable("table/query_stream of the whole table, sorted by score", [{
      rows: whole.rows, MB: whole.megabytes, seconds: whole.seconds, "rows/s": whole.rows / whole.seconds, "peak service RSS MB": whole.peakRss,
    }]);
    if (whole.rows !== ROWS) process.exitCode = 1;
  } finally {
    await store.close();
    await service.stop();
    await bench.stop();
  }
}

await main();
