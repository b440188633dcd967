/**
 * The service at scale against one box, same workload, same run. The scale-out topology as
 * `make test`'s cluster run starts it: 2 ingest processes, 2 workers in one consumer group and
 * 1 query process on a 3-broker Kafka-protocol mock (kcat), over a 2 shards × 2 replicas
 * ClickHouse 18.16 cluster with ZooKeeper (scripts/clickhouse-cluster.sh), behind the tests'
 * routing proxy; one box: the service as `make start` runs it (ROLE=all, the durable log, its
 * own ClickHouse server under DATA_DIR). Both run the compiled service at LOG_LEVEL=info (the
 * default) with their data on the same filesystem, and take the same bodies
 * (bench/callBodies.ts `realisticBatchBodies`: UUIDv7 and random ids, traces of one to four
 * calls, a fifth of them ended in the next request).
 *
 * Prints, for each: parts per second acknowledged and queryable, and the ratio; for the
 * topology, where the CPU went (per process: ingest, workers, query, the broker, each
 * ClickHouse node, ZooKeeper), what the workers did per batch (batch sizes, Kafka fetches,
 * ClickHouse inserts and reads, from their /metrics) and the ZooKeeper transactions of the
 * ClickHouse nodes; and `clickhouse-client` inserting the same rows into a copy of the calls
 * tables made the same way (Replicated local tables under a Distributed one).
 *
 *   npx tsx bench/run.ts cluster   (BENCH_CLUSTER_PARTS: parts sent, default 40,000;
 *   CLICKHOUSE_LOG_QUERIES=1: also each node's CPU by kind of query, and its merges)
 *
 * The mock broker keeps a few MB per partition and drops the oldest beyond (librdkafka's mock
 * cluster): the ingest processes' lag bound keeps the workers' backlog within it.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { CALLS_MIGRATION } from "../services/store/calls/schema.js";
import { clusterStatements, localTableName } from "../services/store/clusterSchema.js";
import { startClusterTopology } from "../test/support/topology.js";
import { basic, KEY_ADMIN } from "../test/support/keys.js";
import { realisticBatchBodies } from "./callBodies.js";
import { BENCH_AUTH, children, clickhouseClientInsertRate, compiledService, cpuProfileFlags, cpuSeconds, countCalls, keptAlivePoster, printClickHouseWork, printTable, sendAllRetrying, spawnService } from "./support.js";

const PARTS = Number(process.env.BENCH_CLUSTER_PARTS ?? 40_000);
const QUERYABLE_WITHIN_MS = 300_000;
const CLIENTS = 8;
const PROJECT = "acme/cluster-bench";

const load = () => loadavg().map((l) => l.toFixed(1)).join(" ");

interface Ingested {
  readonly acked: number;
  readonly queryable: number;
  readonly refused: number;
  readonly wallSeconds: number;
}

/** Sends every body, then waits until every call is queryable: parts per second of both. */
async function ingest(url: string, authorization: string, bodies: readonly Uint8Array[], calls: number): Promise<Ingested> {
  const headers = { "content-type": "application/json", authorization };
  const started = performance.now();
  const refused = await sendAllRetrying({ post: keptAlivePoster(url, CLIENTS), path: "/call/upsert_batch", headers, bodies, senders: CLIENTS });
  const acked = performance.now();
  for (let stored = 0; stored < calls; stored = await countCalls(url, PROJECT, authorization)) {
    if (performance.now() - acked > QUERYABLE_WITHIN_MS) throw new Error(`${stored} of ${calls} calls queryable ${QUERYABLE_WITHIN_MS} ms after the last was acknowledged`);
    // Each count is a read of every shard: a quarter second between them keeps it a small share of the cluster's work.
    await new Promise((r) => setTimeout(r, 250));
  }
  const queryable = performance.now();
  const parts = calls * 2;
  return { acked: parts / ((acked - started) / 1000), queryable: parts / ((queryable - started) / 1000), refused, wallSeconds: (queryable - started) / 1000 };
}

/** CPU seconds used so far by a process, 0 once gone. */
const cpuSecondsOrNone = (pid: number): number => (existsSync(`/proc/${pid}/stat`) ? cpuSeconds(pid) : 0);

/** CPU seconds of named processes between construction and `read`. */
class ProcessesCpu {
  private readonly start: Map<string, number>;
  constructor(private readonly pids: ReadonlyMap<string, number>) {
    this.start = new Map([...pids].map(([name, pid]) => [name, cpuSecondsOrNone(pid)]));
  }
  read(): Map<string, number> {
    return new Map([...this.pids].map(([name, pid]) => [name, cpuSecondsOrNone(pid) - this.start.get(name)!]));
  }
}

/** CPU seconds of a process so far by thread name (/proc/<pid>/task/<tid>/comm); threads gone since are not counted. */
function threadCpu(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
        byName.set(name, (byName.get(name) ?? 0) + cpuSeconds(`${pid}/task/${tid}`));
      } catch {
        // the thread ended
      }
    }
  } catch {
    // the process ended
  }
  return byName;
}

/** Where the CPU went, per process, with the total. */
function printCpu(topology: string, used: ReadonlyMap<string, number>, wallSeconds: number, parts: number): void {
  const row = (process: string, seconds: number) => ({ process, "CPU s": seconds.toFixed(2), "cores busy": (seconds / wallSeconds).toFixed(2), "CPU µs per part": ((seconds * 1e6) / parts).toFixed(1) });
  const total = [...used.values()].reduce((a, b) => a + b, 0);
  printTable(`${topology}: where the CPU went (${wallSeconds.toFixed(1)} s wall, ${cpus().length} cores)`, [...[...used].map(([process, seconds]) => row(process, seconds)), row("all of the above", total)]);
}

/** Sums of Prometheus samples by metric name and labels, from a /metrics text. */
async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (match) samples.set(`${match[1]}${match[2] ?? ""}`, Number(match[3]));
  }
  return samples;
}

/** What the workers did between two scrapes of each: counts by sample, added up over workers. */
function workerDeltas(before: Map<string, number>[], after: Map<string, number>[]): Map<string, number> {
  const out = new Map<string, number>();
  after.forEach((samples, i) => {
    for (const [key, value] of samples) out.set(key, (out.get(key) ?? 0) + value - (before[i]!.get(key) ?? 0));
  });
  return out;
}

/** The sum of the samples of a metric, those whose labels include `label` when given. */
const sumOf = (samples: Map<string, number>, metric: string, label = "") =>
  [...samples].filter(([k]) => (k === metric || k.startsWith(`${metric}{`)) && k.includes(label)).reduce((n, [, v]) => n + v, 0);

/** ClickHouse's own counters on each node (system.events): queries and ZooKeeper transactions. */
async function nodeEvents(url: string): Promise<Map<string, number>> {
  const res = await fetch(`${url}/?query=${encodeURIComponent("SELECT event, value FROM system.events WHERE event IN ('Query', 'InsertQuery', 'SelectQuery', 'ZooKeeperTransactions', 'ReplicatedPartFetches') FORMAT TSV")}`);
  return new Map((await res.text()).trim().split("\n").filter(Boolean).map((line) => {
    const [event, value] = line.split("\t");
    return [event!, Number(value)];
  }));
}

/**
 * A copy of `calls` as the cluster schema makes it (services/store/clusterSchema.ts from
 * CALLS_MIGRATION), named `calls_copy`, with the columns `calls` has now (its added ones too):
 * the rows dumped from `calls` fit it.
 */
function callsCopyOnCluster(cluster: string, database: string): { table: string; create: string[] } {
  const createCalls = CALLS_MIGRATION.statements.find((s) => s.includes("CREATE TABLE IF NOT EXISTS calls ("))!;
  const [local, distributed] = clusterStatements(createCalls.replace("calls (", "calls_copy ("), { cluster, database }, new Map());
  return {
    table: "calls_copy",
    create: [
      `DROP TABLE IF EXISTS ${database}.${localTableName("calls_copy")} ON CLUSTER ${cluster}`,
      local!.replace(/ \([\s\S]*\) ENGINE = /, ` AS ${database}.${localTableName("calls")} ENGINE = `),
      distributed!,
    ],
  };
}

/** One box as `make start` runs it: its own ClickHouse under DATA_DIR (on the same filesystem as the cluster's). */
async function oneBox(bodies: readonly Uint8Array[], calls: number): Promise<Ingested> {
  const dir = mkdtempSync(join(tmpdir(), "bench-one-box-"));
  try {
    const service = await spawnService({ DATA_DIR: dir });
    try {
      const clickhouse = children(service.pid).find((c) => c.comm.startsWith("clickhouse"));
      const cpu = new ProcessesCpu(new Map([["service", service.pid], ["clickhouse-server", clickhouse?.pid ?? 0], ["bench (senders)", process.pid]]));
      const result = await ingest(service.url, BENCH_AUTH, bodies, calls);
      printCpu("One box", cpu.read(), result.wallSeconds, calls * 2);
      return result;
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function scaleOut(bodies: readonly Uint8Array[], calls: number): Promise<Ingested> {
  const dir = mkdtempSync(join(tmpdir(), "bench-cluster-"));
  try {
    const { cluster, kafkaPid, topology, stop } = await startClusterTopology(dir, { serviceArgs: [...cpuProfileFlags(), compiledService()], logLevel: "info" });
    try {
      const pids = new Map<string, number>([
        ...topology.processes.map((p) => [p.name, p.pid] as [string, number]),
        ["kafka mock (kcat)", kafkaPid],
        ...cluster.nodes.map((n) => [`clickhouse ${n.name}`, n.pid!] as [string, number]),
        ["zookeeper", cluster.zookeeper.pid!],
        ["bench (senders, routing proxy)", process.pid],
      ]);
      const workers = topology.processes.filter((p) => p.name.startsWith("worker"));
      const metricsBefore = await Promise.all(workers.map((w) => scrape(w.url)));
      const eventsBefore = await Promise.all(cluster.nodes.map((n) => nodeEvents(n.url)));
      const threadsBefore = cluster.nodes.map((n) => threadCpu(n.pid!));
      const cpu = new ProcessesCpu(pids);
      const result = await ingest(topology.url, basic(KEY_ADMIN), bodies, calls);
      const used = cpu.read();
      const threads = cluster.nodes.map((n, i) => [...threadCpu(n.pid!)].map(([name, s]) => [name, s - (threadsBefore[i]!.get(name) ?? 0)] as const));
      const metrics = workerDeltas(metricsBefore, await Promise.all(workers.map((w) => scrape(w.url))));
      const events = await Promise.all(cluster.nodes.map((n) => nodeEvents(n.url)));
      const parts = calls * 2;
      printCpu("Scale-out", used, result.wallSeconds, parts);
      printWorkerWork(metrics, parts);
      const threadNames = [...new Set(threads.flatMap((t) => t.map(([name]) => name)))];
      printTable("Scale-out: each ClickHouse node's CPU µs per part by thread name (clickhouse-serv: its unnamed threads: queries, schedule pool)", cluster.nodes.map((n, i) => ({
        node: n.name, ...Object.fromEntries(threadNames.map((name) => [name, (((new Map(threads[i]).get(name) ?? 0) * 1e6) / parts).toFixed(1)])),
      })));
      printTable("Scale-out: each ClickHouse node's own counters over the run (system.events)", cluster.nodes.map((n, i) => {
        const delta = (event: string) => (events[i]!.get(event) ?? 0) - (eventsBefore[i]!.get(event) ?? 0);
        return { node: n.name, queries: delta("Query"), inserts: delta("InsertQuery"), selects: delta("SelectQuery"), "ZooKeeper transactions": delta("ZooKeeperTransactions"), "parts fetched from the other replica": delta("ReplicatedPartFetches") };
      }));
      for (const n of cluster.nodes) printClickHouseWork(n, topology.database, parts, "part", `ClickHouse ${n.name}`);
      const reference = clickhouseClientInsertRate(cluster.nodes[0]!, topology.database, PROJECT, { ...callsCopyOnCluster(cluster.cluster, topology.database), settings: ["--insert_distributed_sync=1"] });
      console.log(`\nclickhouse-client inserting the same rows (Distributed over Replicated, synchronous): ${reference.toFixed(0)} rows/s`);
      return result;
    } finally {
      await stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Batches the workers took and the round trips they made for them, from their /metrics. */
function printWorkerWork(metrics: Map<string, number>, parts: number): void {
  const batches = sumOf(metrics, "worker_batch_events_count", 'topic="tracehouse.events"');
  const events = sumOf(metrics, "worker_batch_events_sum", 'topic="tracehouse.events"');
  const fetches = sumOf(metrics, "queue_fetched_batches_total", 'topic="tracehouse.events"');
  const perBatch = (n: number) => (batches > 0 ? (n / batches).toFixed(1) : "-");
  const operations = [...metrics].filter(([k, v]) => k.startsWith("clickhouse_query_seconds_count") && v > 0).map(([k, v]) => [/operation="([^"]*)"/.exec(k)?.[1] ?? k, v] as const);
  const inserts = [...metrics].filter(([k, v]) => k.startsWith("clickhouse_insert_seconds_count") && v > 0).map(([k, v]) => [/table="([^"]*)"/.exec(k)?.[1] ?? k, v] as const);
  printTable("Scale-out: the workers' batches (their /metrics)", [{
    parts, batches, "events per batch": batches > 0 ? (events / batches).toFixed(0) : "-", "Kafka partition batches fetched": fetches, "fetched per batch": perBatch(fetches),
    "ClickHouse inserts per batch": perBatch(inserts.reduce((n, [, v]) => n + v, 0)), "ClickHouse round trips per batch": perBatch(operations.reduce((n, [, v]) => n + v, 0)),
  }]);
  printTable("Scale-out: the workers' ClickHouse round trips by operation and by inserted table", [...operations.map(([name, n]) => ({ what: name, count: n, "per batch": perBatch(n) })), ...inserts.map(([name, n]) => ({ what: `insert ${name}`, count: n, "per batch": perBatch(n) }))]);
}

async function main(): Promise<void> {
  const loadBefore = load();
  const bodies = realisticBatchBodies(PROJECT, PARTS);
  const calls = PARTS / 2;
  compiledService();
  const single = await oneBox(bodies, calls);
  const scaled = await scaleOut(bodies, calls);
  const row = (topology: string, r: Ingested) => ({ topology, parts: calls * 2, "acked parts/s": r.acked.toFixed(0), "queryable parts/s": r.queryable.toFixed(0), "429/503 retries": r.refused });
  printTable(`Calls upsert_batch, ${bodies.length} requests, ${CLIENTS} clients, realistic ids and traces (bench/callBodies.ts)`, [
    row("one box (make start: ROLE=all, durable log, its own ClickHouse)", single),
    row("scale-out: 2 ingest + 2 workers (Kafka, 3 brokers) + 1 query, 2 shards × 2 replicas (18.16)", scaled),
  ]);
  console.log(`\nscale-out ÷ one box, queryable parts/s: ${(scaled.queryable / single.queryable).toFixed(3)} (floor 0.5)`);
  console.log(`load average (1, 5, 15 min): ${loadBefore} before, ${load()} after; the machine is shared, the figures move with its load`);
}

await main();
