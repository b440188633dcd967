/**
 * Annotation queue benchmark (issue 11, "Tests and speed": item queries on a 100,000-item
 * queue). Run: `npx tsx bench/run.ts annotation` (or `make bench`).
 *
 * Starts its own ClickHouse and a service process, logs BENCH_ANNOTATION_ITEMS calls (100,000 by default; 10 op names) through
 * `/call/upsert_batch`, creates a queue and adds every call through
 * `/annotation_queues/{id}/items` in requests of 10,000 ids, then moves BENCH_ANNOTATION_PROGRESS
 * items (500) to `completed` (and as many others to `in_progress`) through the progress route.
 * Then times, over 20 runs each, `items/query` pages of 100 over HTTP: the first page, a deep
 * page (offset = items − 100), a page filtered on op name, a page filtered on state, a page
 * sorted by the call's start, and the first and deep pages with `include_position`; and the
 * queue's stats. Prints the set-up figures and a table of p50/p99 with the CPU each query cost the
 * service and ClickHouse together (a figure that other load on the machine changes less than
 * the latencies).
 */
import { ensureDatabase } from "../services/store/migrations.js";
import { loadavg } from "node:os";
import { BENCH_AUTH, childPids, CpuMeter, printTable, spawnService, startBenchClickHouse, stats, timeIt, type ServiceProcess } from "./support.js";

const ITEMS = Number(process.env.BENCH_ANNOTATION_ITEMS ?? 100_000);
const PROGRESS = Number(process.env.BENCH_ANNOTATION_PROGRESS ?? 500);
const CALLS_PER_BATCH = 1000;
const IDS_PER_ADD = 10_000;
const CLIENTS = 4;
const PAGE = 100;
const RUNS = 20;
const PROJECT = "bench/annotation";
const DATABASE = "bench_annotation";
const T0 = Date.UTC(2026, 9, 1);

async function post<T>(service: ServiceProcess, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${service.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: BENCH_AUTH }, body: JSON.stringify(body) });
  const answer = await res.text();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${answer.slice(0, 500)}`);
  return JSON.parse(answer) as T;
}

/** Waits until every write the service acknowledged is stored (its barrier). */
async function waitStored(service: ServiceProcess): Promise<void> {
  const res = await fetch(`${service.url}/queue/stored?timeout_ms=600000`, { headers: { authorization: BENCH_AUTH } });
  if (res.status !== 200) throw new Error(`/queue/stored answered ${res.status}: ${(await res.text()).slice(0, 500)}`);
}

/** Runs `work(i)` for i in [0, count) on CLIENTS concurrent workers. */
async function pool(count: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (next < count) await work(next++);
  }));
}

const callId = (i: number) => `call-${String(i).padStart(7, "0")}`;

async function logCalls(service: ServiceProcess): Promise<void> {
  await pool(Math.ceil(ITEMS / CALLS_PER_BATCH), async (b) => {
    const batch = [];
    for (let i = b * CALLS_PER_BATCH; i < Math.min(ITEMS, (b + 1) * CALLS_PER_BATCH); i++) {
      const startedAt = new Date(T0 + i * 1000).toISOString();
      const start = { project_id: PROJECT, id: callId(i), trace_id: `trace-${Math.floor(i / 10)}`, op_name: `weave:///${PROJECT}/op/step_${i % 10}:v1`, started_at: startedAt, attributes: {}, inputs: { prompt: `question ${i}` } };
      const end = { project_id: PROJECT, id: callId(i), started_at: startedAt, ended_at: new Date(T0 + i * 1000 + 250).toISOString(), output: `answer ${i}`, summary: {} };
      batch.push({ mode: "start", req: { start } }, { mode: "end", req: { end } });
    }
    await post(service, "/call/upsert_batch", { batch });
  });
}

async function addItems(service: ServiceProcess, queueId: string): Promise<number> {
  let added = 0;
  for (let from = 0; from < ITEMS; from += IDS_PER_ADD) {
    const ids = Array.from({ length: Math.min(IDS_PER_ADD, ITEMS - from) }, (_, k) => callId(from + k));
    added += (await post<{ added_count: number }>(service, `/annotation_queues/${queueId}/items`, { project_id: PROJECT, call_ids: ids, display_fields: ["inputs.prompt", "output"] })).added_count;
  }
  return added;
}

/** Every item id of the queue, in queue order (pages of 10,000). */
async function itemIds(service: ServiceProcess, queueId: string): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; offset < ITEMS; offset += 10_000) {
    const { items } = await post<{ items: { id: string }[] }>(service, `/annotation_queues/${queueId}/items/query`, { project_id: PROJECT, limit: 10_000, offset });
    ids.push(...items.map((i) => i.id));
  }
  return ids;
}

/** Items spread over the queue: PROGRESS completed, PROGRESS in progress. */
async function setProgress(service: ServiceProcess, queueId: string): Promise<number[]> {
  const all = await itemIds(service, queueId);
  const step = Math.max(1, Math.floor(all.length / (2 * PROGRESS)));
  const ids = Array.from({ length: Math.min(2 * PROGRESS, all.length) }, (_, k) => all[k * step]!);
  const latencies: number[] = [];
  await pool(ids.length, async (k) => {
    const t = performance.now();
    await post(service, `/annotation_queues/${queueId}/items/${ids[k]}/progress`, { project_id: PROJECT, annotation_state: k % 2 === 0 ? "completed" : "in_progress" });
    latencies.push(performance.now() - t);
  });
  return latencies;
}

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("annotation");
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  await ensureDatabase(bench.ch.url, DATABASE);
  const service = await spawnService({ CLICKHOUSE_URL: bench.ch.url, CLICKHOUSE_DATABASE: DATABASE, DATA_DIR: bench.dir });
  try {
    let t = performance.now();
    await logCalls(service);
    await waitStored(service); // every call stored before the queue takes them
    const ingestS = (performance.now() - t) / 1000;
    const { id: queueId } = await post<{ id: string }>(service, "/annotation_queues", { project_id: PROJECT, name: "bench", scorer_refs: [] });
    t = performance.now();
    const added = await addItems(service, queueId);
    const addS = (performance.now() - t) / 1000;
    if (added !== ITEMS) throw new Error(`added ${added} items of ${ITEMS}`);
    const progress = stats(await setProgress(service, queueId));
    printTable("set-up", [
      { step: `log ${ITEMS.toLocaleString("en")} calls (upsert_batch, ${CLIENTS} clients)`, seconds: ingestS },
      { step: `add them to a queue (${IDS_PER_ADD.toLocaleString("en")} ids per request)`, seconds: addS },
      { step: `progress route, ${2 * PROGRESS} moves (${CLIENTS} clients): p50 ${progress.p50.toFixed(1)} ms, p99 ${progress.p99.toFixed(1)} ms`, seconds: 0 },
    ]);

    const deep = ITEMS - PAGE;
    const cases: { name: string; body: Record<string, unknown>; path?: string }[] = [
      { name: "first page", body: { limit: PAGE } },
      { name: `deep page (offset ${deep.toLocaleString("en")})`, body: { limit: PAGE, offset: deep } },
      { name: "filter call_op_name (1 in 10)", body: { limit: PAGE, filter: { call_op_name: `weave:///${PROJECT}/op/step_7:v1` } } },
      { name: `filter annotation_states [completed] (${PROGRESS.toLocaleString("en")} items)`, body: { limit: PAGE, filter: { annotation_states: ["completed"] } } },
      { name: "filter annotation_states [unstarted]", body: { limit: PAGE, filter: { annotation_states: ["unstarted"] } } },
      { name: "sort call_started_at desc", body: { limit: PAGE, sort_by: [{ field: "call_started_at", direction: "desc" }] } },
      { name: "first page, include_position", body: { limit: PAGE, include_position: true } },
      { name: "deep page, include_position", body: { limit: PAGE, offset: deep, include_position: true } },
      { name: "stats of the queue", body: { queue_ids: [queueId] }, path: "/annotation_queues/stats" },
    ];
    const rows: Record<string, string | number>[] = [];
    for (const c of cases) {
      const path = c.path ?? `/annotation_queues/${queueId}/items/query`;
      const body = { project_id: PROJECT, ...c.body };
      let count = 0;
      const meter = new CpuMeter(service.pid, childPids("clickhouse")[0] ?? null);
      const samples = await timeIt(RUNS, async () => {
        const res = await post<{ items?: unknown[]; stats?: unknown[] }>(service, path, body);
        count = (res.items ?? res.stats ?? []).length;
      });
      const { p50, p99 } = stats(samples);
      const cpu = meter.read();
      // timeIt runs once more to warm up: RUNS + 1 requests.
      rows.push({ query: c.name, rows: count, "p50 ms": p50, "p99 ms": p99, "CPU ms per query (service + ClickHouse)": ((cpu.service + cpu.clickhouse) * 1000) / (RUNS + 1) });
    }
    printTable(`annotation_queues items/query on a ${ITEMS.toLocaleString("en")}-item queue over HTTP (pages of ${PAGE}, ${RUNS} runs; load average ${loadavg()[0]!.toFixed(1)} on this machine)`, rows);
  } finally {
    await service.stop();
    await bench.stop();
  }
}

await main();
