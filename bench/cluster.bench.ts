/**
 * The service at scale (issue 30's topology, as `make test`'s cluster run starts it): 2 ingest
 * processes, 2 workers in one consumer group and 1 query process on a 3-broker Kafka-protocol
 * mock (kcat), over a 2 shards × 2 replicas ClickHouse 18.16 cluster with ZooKeeper
 * (scripts/clickhouse-cluster.sh), behind the routing proxy of the tests; the processes run
 * the compiled service, as `make start` does. Prints the calls `upsert_batch` ingest rate,
 * acknowledged and queryable, and beside it `clickhouse-client` inserting the same rows into
 * a copy of the calls tables made the same way (Replicated local tables under a Distributed
 * one, `insert_distributed_sync`), with the load average before and after: the figures are
 * only comparable at a similar load.
 *
 *   npx tsx bench/cluster.bench.ts   (BENCH_CLUSTER_REQUESTS: requests of 500 parts, default 60)
 *
 * The mock broker keeps a few MB per partition and drops the oldest beyond (librdkafka's mock
 * cluster): more requests than the default let the workers' backlog outgrow it, and the calls
 * dropped never become queryable (the bench then fails at its deadline, not a figure).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { CALLS_MIGRATION } from "../services/store/calls/schema.js";
import { clusterStatements, localTableName } from "../services/store/clusterSchema.js";
import { startClusterTopology } from "../test/support/topology.js";
import { basic, KEY_ADMIN } from "../test/support/keys.js";
import { encodedBatchBodies, PARTS_PER_REQUEST } from "./callBodies.js";
import { clickhouseClientInsertRate, compiledService, countCalls, keptAlivePoster, printTable, sendAllRetrying } from "./support.js";

const REQUESTS = Number(process.env.BENCH_CLUSTER_REQUESTS ?? 60);
const QUERYABLE_WITHIN_MS = 300_000;
const CLIENTS = 8;
const PROJECT = "acme/cluster-bench";
const headers = { "content-type": "application/json", authorization: basic(KEY_ADMIN) };

const load = () => loadavg().map((l) => l.toFixed(1)).join(" ");

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

async function main(): Promise<void> {
  const loadBefore = load();
  const serviceArgs = [compiledService()];
  const dir = mkdtempSync(join(tmpdir(), "bench-cluster-"));
  try {
    // As the suite's cluster run (test/globalSetup.cluster.ts).
    const { cluster, topology, stop } = await startClusterTopology(dir, { serviceArgs });
    try {
      const bodies = encodedBatchBodies(PROJECT, REQUESTS);
      const send = keptAlivePoster(topology.url, CLIENTS);
      const started = performance.now();
      const refused = await sendAllRetrying({ post: send, path: "/call/upsert_batch", headers, bodies, senders: CLIENTS });
      const acked = performance.now();
      const calls = (REQUESTS * PARTS_PER_REQUEST) / 2;
      for (let stored = 0; stored < calls; stored = await countCalls(topology.url, PROJECT, headers.authorization)) {
        if (performance.now() - acked > QUERYABLE_WITHIN_MS) throw new Error(`${stored} of ${calls} calls queryable ${QUERYABLE_WITHIN_MS} ms after the last was acknowledged`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const queryable = performance.now();
      const parts = calls * 2;
      const reference = clickhouseClientInsertRate(cluster.nodes[0]!, topology.database, PROJECT, { ...callsCopyOnCluster(cluster.cluster, topology.database), settings: ["--insert_distributed_sync=1"] });
      printTable(`Calls upsert_batch, ${PARTS_PER_REQUEST} parts/request, ${CLIENTS} clients: 2 ingest + 2 workers (Kafka, 3 brokers) + 1 query, 2 shards × 2 replicas (18.16)`, [
        {
          parts,
          "acked parts/s": (parts / ((acked - started) / 1000)).toFixed(0),
          "queryable parts/s": (parts / ((queryable - started) / 1000)).toFixed(0),
          "429/503 retries": refused,
          "clickhouse-client rows/s (same rows, Distributed over Replicated)": reference.toFixed(0),
        },
      ]);
    } finally {
      await stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nload average (1, 5, 15 min): ${loadBefore} before, ${load()} after; the machine is shared, the figures move with its load`);
}

await main();
