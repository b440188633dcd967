/**
 * Refs benchmark (issue 9, "Speed": `refs/read_batch` of 1,000 row refs, p50 ≤ 100 ms). Run:
 * `npx tsx bench/run.ts refs` (or `make bench`).
 *
 * Starts its own ClickHouse and a service process, creates a dataset table of
 * BENCH_REFS_TABLE_ROWS rows (10,000 by default) of ~1 KB each (in `/table/create` requests of
 * 1,000 rows, joined with `/table/create_from_digests`) and a Dataset object whose `rows` is
 * that table's ref. Then times, over 20 runs each, `/refs/read_batch` of BENCH_REFS_BATCH
 * (1,000) refs to rows spread over the table, written the two ways clients write them: a
 * table ref with `id/<row digest>`, and the Dataset's ref with `attr/rows/id/<row digest>`
 * (one more round: the object is read, then its table ref followed); and one ref alone, the
 * floor of a request on this machine.
 */
import { tableDigest } from "../services/digests.js";
import { ensureDatabase } from "../services/store/migrations.js";
import { BENCH_AUTH, printTable, spawnService, startBenchClickHouse, stats, timeIt, type ServiceProcess } from "./support.js";

const ROWS = Number(process.env.BENCH_REFS_TABLE_ROWS ?? 10_000);
const BATCH = Number(process.env.BENCH_REFS_BATCH ?? 1000);
const CREATE_CHUNK = 1000;
const RUNS = 20;
const PROJECT = "bench/refs";
const DATABASE = "bench_refs";

/** Row i, ~1 KB of JSON. */
function rowText(i: number): string {
  const filler = "lorem ipsum dolor sit amet ".repeat(16);
  return JSON.stringify({ id: `example-${i}`, question: `question ${i}: ${filler}`, answer: `answer ${i}: ${filler}`, score: (i % 1000) / 10 + 0.5 });
}

async function post<T>(service: ServiceProcess, path: string, body: string): Promise<T> {
  const res = await fetch(`${service.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: BENCH_AUTH }, body });
  const answer = await res.text();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${answer.slice(0, 500)}`);
  return JSON.parse(answer) as T;
}

async function createDataset(service: ServiceProcess): Promise<{ tableDigest: string; rowDigests: string[]; datasetRef: string }> {
  const rowDigests: string[] = [];
  for (let from = 0; from < ROWS; from += CREATE_CHUNK) {
    const rows = Array.from({ length: Math.min(CREATE_CHUNK, ROWS - from) }, (_, k) => rowText(from + k));
    const created = await post<{ row_digests: string[] }>(service, "/table/create", `{"table":{"project_id":"${PROJECT}","rows":[${rows.join(",")}]}}`);
    rowDigests.push(...created.row_digests);
  }
  const body = JSON.stringify({ project_id: PROJECT, row_digests: rowDigests, expected_digest: tableDigest(rowDigests) });
  const { digest } = await post<{ digest: string }>(service, "/table/create_from_digests", body);
  const val = { _type: "Dataset", _class_name: "Dataset", _bases: ["Object", "BaseModel"], name: "bench", rows: `weave:///${PROJECT}/table/${digest}` };
  const obj = await post<{ digest: string }>(service, "/obj/create", JSON.stringify({ obj: { project_id: PROJECT, object_id: "bench-dataset", val } }));
  return { tableDigest: digest, rowDigests, datasetRef: `weave:///${PROJECT}/object/bench-dataset:${obj.digest}` };
}

/** BATCH distinct rows spread over the table. */
function spread(rowDigests: readonly string[]): string[] {
  const step = Math.max(1, Math.floor(rowDigests.length / BATCH));
  return Array.from({ length: Math.min(BATCH, rowDigests.length) }, (_, k) => rowDigests[(k * step) % rowDigests.length]!);
}

async function timeBatch(service: ServiceProcess, refs: readonly string[]): Promise<{ p50: number; p99: number; vals: number }> {
  const body = JSON.stringify({ refs });
  let vals = 0;
  const samples = await timeIt(RUNS, async () => {
    vals = (await post<{ vals: unknown[] }>(service, "/refs/read_batch", body)).vals.length;
  });
  const { p50, p99 } = stats(samples);
  return { p50, p99, vals };
}

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("refs");
  const { ch, dir } = bench;
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  await ensureDatabase(ch.url, DATABASE);
  const service = await spawnService({ CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: DATABASE, DATA_DIR: dir });
  try {
    const dataset = await createDataset(service);
    const rows = spread(dataset.rowDigests);
    const cases = [
      { name: "1 row ref (the request's floor)", refs: rows.slice(0, 1).map((d) => `weave:///${PROJECT}/table/${dataset.tableDigest}/id/${d}`) },
      { name: "table ref + id/<row>", refs: rows.map((d) => `weave:///${PROJECT}/table/${dataset.tableDigest}/id/${d}`) },
      { name: "Dataset ref + attr/rows/id/<row>", refs: rows.map((d) => `${dataset.datasetRef}/attr/rows/id/${d}`) },
      { name: "Dataset ref + attr/rows/id/<row>/key/score", refs: rows.map((d) => `${dataset.datasetRef}/attr/rows/id/${d}/key/score`) },
    ];
    const out: Record<string, string | number>[] = [];
    for (const c of cases) {
      const r = await timeBatch(service, c.refs);
      if (r.vals !== c.refs.length) throw new Error(`${c.name}: ${r.vals} values for ${c.refs.length} refs`);
      out.push({ "refs/read_batch": c.name, refs: c.refs.length, "p50 ms": r.p50, "p99 ms": r.p99 });
    }
    printTable(`refs/read_batch of ${rows.length.toLocaleString("en")} row refs of a ${ROWS.toLocaleString("en")}-row table over HTTP (${RUNS} runs; goal p50 ≤ 100 ms)`, out);
  } finally {
    await service.stop();
    await bench.stop();
  }
}

await main();
