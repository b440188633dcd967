/**
 * Threads benchmark (issue 4, "Speed"). Run: `npx tsx bench/threads.bench.ts` (or `make bench`).
 *
 * Starts its own ClickHouse in a temp dir, migrates, and generates one project with 100,000
 * threads, 1,000,000 turn calls (2% still running, 0.1% deleted) and 3,000,000 nested
 * non-turn calls: the calls are written with INSERT ... SELECT FROM numbers() straight into
 * `calls` (and the deletions into `call_deletions`); the aggregates are then written by the
 * repository code the worker uses — `ThreadsWriteRepository.rebuild` derives the
 * `thread_turns` rows from `calls` (the same rows the worker writes per turn snapshot) and
 * runs the worker's recompute query over every thread; 10,000 threads are then recomputed
 * once more so that FINAL has unmerged versions to collapse, as under live ingest.
 *
 * Then measures, over 20 runs each, the first page (limit 50) sorted by last_updated desc
 * and by p99_turn_duration_ms desc: through HTTP end to end (a service process), through
 * the read repository, and the same page SQL in clickhouse-client; against one SQL query
 * that computes the same page from the raw calls (GROUP BY thread over the turn calls, with
 * the same figures and quantiles), in clickhouse-client. It checks that both give the same
 * page, prints the figures and the ratio, and stops the ClickHouse.
 */
import type { ThreadSortBy } from "../services/contract/threads.js";
import { ClickHouseStore } from "../services/store/clickhouse.js";
import type { LocalClickHouse } from "../services/store/localServer.js";
import { ensureDatabase, migrate } from "../services/store/migrations.js";
import { renderSql, quoteString } from "../services/store/sql.js";
import { toThreadView, type ThreadRow, type ThreadView } from "../services/store/threads/threadRows.js";
import { ThreadsReadRepository } from "../services/store/threads/threadsRead.js";
import { threadsPageQuery, threadsThresholdQuery, type ThreadsQuerySpec } from "../services/store/threads/threadsQuery.js";
import { ThreadsWriteRepository } from "../services/store/threads/threadsWrite.js";
import { BENCH_AUTH, clickhouseClient, clickhouseClientMs, printTable, spawnService, startBenchClickHouse, stats, timeIt } from "./support.js";
import { MIGRATIONS } from "../services/resources.js";
import { ProjectRetention } from "../services/store/projects/retention.js";
import { ProjectSettingsRepository } from "../services/store/projects/settingsRepository.js";

const THREADS = 100_000;
const TURNS = 1_000_000;
const NESTED_PER_TURN = 3;
const RUNS = 20;
const RAW_RUNS = Number(process.env.BENCH_RAW_RUNS ?? 10);
const PROJECT = "bench/threads";
const DATABASE = "bench_threads";
const T0_MICROS = Date.UTC(2026, 9, 1) * 1000;

/** Thread of turn k: the first half round-robin (5 turns each), the second half hashed. */
const THREAD_OF = (k: string) => `if(${k} < ${TURNS / 2}, ${k} % ${THREADS}, cityHash64(${k}, 7) % ${THREADS})`;
const TURN_START = (k: string) =>
  `toInt64(${T0_MICROS} + ${THREAD_OF(k)} * 25000000 + intDiv(${k}, ${THREADS}) * 60000000 + cityHash64(${k}, 0) % 1000000)`;
const TURN_DURATION = (k: string) => `toInt64(100000 + cityHash64(${k}, 1) % 30000000)`;
const TURN_RUNNING = (k: string) => `cityHash64(${k}, 2) % 50 = 0`;

function clickhouse(ch: LocalClickHouse, sql: string): void {
  clickhouseClient(ch, sql, { database: DATABASE });
}

function seedCalls(ch: LocalClickHouse): void {
  const common = `json_paths, json_values, storage_size_bytes, version`;
  clickhouse(ch, `INSERT INTO calls (project_id, id, trace_id, parent_id, thread_id, turn_id, op_name, started_at, ended_at, attributes, inputs, output, summary, wb_user_id, ${common})
    SELECT ${quoteString(PROJECT)}, concat('turn-', toString(number)), concat('tr-', toString(number)), NULL,
      concat('th-', toString(${THREAD_OF("number")})), concat('turn-', toString(number)),
      'weave:///bench/threads/op/chat:v1', ${TURN_START("number")},
      if(${TURN_RUNNING("number")}, NULL, ${TURN_START("number")} + ${TURN_DURATION("number")}),
      '{"env":"bench"}', concat('{"message":"turn ', toString(number), '"}'), '{"answer":"ok"}', '{}', 'bench',
      ['inputs.message'], [concat('turn ', toString(number))], 120, 2000000000000000
    FROM numbers(${TURNS})`);
  clickhouse(ch, `INSERT INTO calls (project_id, id, trace_id, parent_id, thread_id, turn_id, op_name, started_at, ended_at, attributes, inputs, output, summary, wb_user_id, ${common})
    SELECT ${quoteString(PROJECT)}, concat('n-', toString(number)), concat('tr-', toString(k)), concat('turn-', toString(k)),
      concat('th-', toString(${THREAD_OF("k")})), concat('turn-', toString(k)),
      concat('weave:///bench/threads/op/step', toString(intDiv(number, ${TURNS})), ':v1'),
      ${TURN_START("k")} + (intDiv(number, ${TURNS}) + 1) * 1000, ${TURN_START("k")} + (intDiv(number, ${TURNS}) + 1) * 1000 + 500,
      '{}', '{"step":true}', '{"ok":true}', '{}', 'bench', [], [], 40, 2000000000000000
    FROM (SELECT number, number % ${TURNS} AS k FROM numbers(${TURNS * NESTED_PER_TURN}))`);
  clickhouse(ch, `INSERT INTO call_deletions (project_id, id, deleted_at, wb_user_id)
    SELECT ${quoteString(PROJECT)}, concat('turn-', toString(number)), ${T0_MICROS}, 'bench' FROM numbers(${TURNS}) WHERE cityHash64(number, 3) % 1000 = 0`);
}

/** The same page computed from the raw calls in one query: what the aggregates spare. */
function rawPageSql(orderBy: string): string {
  const done = "ended_at IS NOT NULL";
  return `SELECT thread_id, count() AS turn_count, min(started_at) AS start_time,
  if(countIf(${done}) > 0, maxIf(assumeNotNull(ended_at), ${done}), max(started_at)) AS last_updated,
  argMin(id, (started_at, id)) AS first_turn_id,
  if(countIf(${done}) > 0, argMaxIf(id, (assumeNotNull(ended_at), id), ${done}), argMax(id, (started_at, id))) AS last_turn_id,
  quantilesExactIf(0.5, 0.99)((assumeNotNull(ended_at) - started_at) / 1000, ${done}) AS q,
  if(countIf(${done}) > 0, q[1], NULL) AS p50_turn_duration_ms,
  if(countIf(${done}) > 0, q[2], NULL) AS p99_turn_duration_ms
FROM calls FINAL
WHERE project_id = ${quoteString(PROJECT)} AND turn_id = id AND thread_id != ''
  AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${quoteString(PROJECT)})
GROUP BY thread_id
ORDER BY ${orderBy}
LIMIT 50`;
}

async function collect(reads: ThreadsReadRepository, spec: ThreadsQuerySpec): Promise<ThreadView[]> {
  const out: ThreadView[] = [];
  for await (const row of reads.stream(spec)) out.push(toThreadView(row));
  return out;
}

/** The worker's per-batch aggregate cost: one recompute query over the touched threads. */
async function recomputeCosts(writes: ThreadsWriteRepository): Promise<Record<string, string | number>[]> {
  const out: Record<string, string | number>[] = [];
  for (const touched of [50, 1000]) {
    let seed = 0;
    const samples = await timeIt(5, () => writes.recompute(PROJECT, Array.from({ length: touched }, () => `th-${(seed = (seed * 7919 + 104729) % THREADS)}`)));
    out.push({ "threads touched": touched, "recompute ms": stats(samples).p50 });
  }
  return out;
}

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("threads");
  const { ch, dir } = bench;
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  await ensureDatabase(ch.url, DATABASE);
  const store = new ClickHouseStore(ch.url, DATABASE);
  try {
    await migrate(store, MIGRATIONS);
    let t = performance.now();
    seedCalls(ch);
    const seedSeconds = (performance.now() - t) / 1000;
    t = performance.now();
    const writes = new ThreadsWriteRepository(store);
    await writes.rebuild(PROJECT);
    await writes.recompute(PROJECT, Array.from({ length: 10_000 }, (_, i) => `th-${i * 10}`));
    const aggregateSeconds = (performance.now() - t) / 1000;
    const [counts] = await store.rows<{ calls: string; turns: string; threads: string; versions: string }>("bench_counts", {
      sql: `SELECT (SELECT count() FROM calls) AS calls, (SELECT count() FROM thread_turns) AS turns,
              (SELECT count() FROM threads FINAL WHERE turn_count > 0) AS threads, (SELECT count() FROM threads) AS versions`,
      params: {},
    });
    printTable("Data (one project)", [{
      calls: Number(counts!.calls), "turn rows": Number(counts!.turns), threads: Number(counts!.threads), "threads rows (versions)": Number(counts!.versions),
      "seed calls s": seedSeconds, "aggregate s": aggregateSeconds,
    }]);

    const service = await spawnService({ CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: DATABASE, DATA_DIR: dir });
    const reads = new ThreadsReadRepository(store, new ProjectRetention(new ProjectSettingsRepository(store), null));
    const cases: { name: string; sortBy: ThreadSortBy[]; rawOrder: string }[] = [
      { name: "last_updated desc", sortBy: [{ field: "last_updated", direction: "desc" }], rawOrder: "last_updated DESC, thread_id DESC" },
      { name: "p99_turn_duration_ms desc", sortBy: [{ field: "p99_turn_duration_ms", direction: "desc" }], rawOrder: "p99_turn_duration_ms DESC, thread_id DESC" },
    ];
    const rows: Record<string, string | number>[] = [];
    try {
      for (const c of cases) {
        const spec: ThreadsQuerySpec = { projectId: PROJECT, sortBy: c.sortBy, limit: 50 };
        const ours = await collect(reads, spec);
        const raw = (await store.rows<ThreadRow>("bench_raw_page", { sql: rawPageSql(c.rawOrder), params: {} })).map(toThreadView);
        const same = JSON.stringify(ours) === JSON.stringify(raw);
        const body = JSON.stringify({ project_id: PROJECT, sort_by: c.sortBy, limit: 50 });
        const http = stats(await timeIt(RUNS, async () => {
          const res = await fetch(`${service.url}/threads/stream_query`, { method: "POST", headers: { "content-type": "application/json", authorization: BENCH_AUTH }, body });
          if (res.status !== 200) throw new Error(`threads query answered ${res.status}: ${await res.text()}`);
          await res.text();
        }));
        const repo = stats(await timeIt(RUNS, () => collect(reads, spec)));
        const sqlOf = (q: { sql: string; params: Parameters<typeof renderSql>[1] }) => renderSql(q.sql, q.params);
        const plainSql = stats(clickhouseClientMs(ch.tcpPort, DATABASE, sqlOf(threadsPageQuery(spec)), RUNS));
        const thresholdQuery = threadsThresholdQuery(spec, 50 * 4);
        const [bound] = await store.rows<{ threshold: string | number }>("bench_threshold", thresholdQuery);
        const thresholdSql = stats(clickhouseClientMs(ch.tcpPort, DATABASE, sqlOf(thresholdQuery), RUNS));
        const windowSql = stats(clickhouseClientMs(ch.tcpPort, DATABASE, sqlOf(threadsPageQuery(spec, { threshold: bound!.threshold })), RUNS));
        const ourSql = thresholdSql.p50 + windowSql.p50;
        const rawSql = stats(clickhouseClientMs(ch.tcpPort, DATABASE, rawPageSql(c.rawOrder), RAW_RUNS));
        rows.push({
          "first page (limit 50)": c.name,
          "HTTP ms": http.p50,
          "repository ms": repo.p50,
          "our SQL ms": ourSql,
          "(FINAL unwindowed ms)": plainSql.p50,
          "raw-calls SQL ms": rawSql.p50,
          "raw ÷ HTTP": rawSql.p50 / http.p50,
          "raw ÷ our SQL": rawSql.p50 / ourSql,
          "same page": same ? "yes" : "NO",
        });
      }
    } finally {
      await service.stop();
    }
    printTable(`Threads: ${THREADS.toLocaleString("en")} threads, ${TURNS.toLocaleString("en")} turns, ${(TURNS * NESTED_PER_TURN).toLocaleString("en")} nested calls (p50 of ${RUNS} runs; raw SQL ${RAW_RUNS} runs)`, rows);
    console.log("HTTP: POST /threads/stream_query end to end; repository: ThreadsReadRepository.stream (threshold + windowed page);");
    console.log("SQL columns: server time in clickhouse-client (our SQL = threshold query + windowed page query).");
    printTable("Worker: recompute of the threads one batch touched (p50 of 5 runs)", await recomputeCosts(writes));
    if (rows.some((r) => r["same page"] !== "yes")) process.exitCode = 1;
  } finally {
    await store.close();
    await bench.stop();
  }
}

await main();
