/**
 * The service at scale (issue 30's topology, as `make test`'s cluster run starts it): 2 ingest
 * processes, 2 workers in one consumer group and 1 query process on a 3-broker Kafka-protocol
 * mock (kcat), over a 2 shards × 2 replicas ClickHouse 18.16 cluster with ZooKeeper
 * (scripts/clickhouse-cluster.sh), behind the routing proxy of the tests. Prints the calls
 * `upsert_batch` ingest rate, acknowledged and queryable, beside `clickhouse-client` inserting
 * the same rows into one MergeTree table of node ch11, in the same run.
 *
 *   npx tsx bench/cluster.bench.ts   (BENCH_CLUSTER_REQUESTS: requests of 500 parts, default 200)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCluster, stopCluster } from "../scripts/clickhouseCluster.js";
import { startMockKafka } from "../test/support/mockKafka.js";
import { startTopology } from "../test/support/topology.js";
import { basic, KEY_ADMIN } from "../test/support/keys.js";
import { batchBody, PARTS_PER_REQUEST } from "./callBodies.js";
import { clickhouseClientInsertRate, keptAlivePoster, printTable } from "./support.js";

const REQUESTS = Number(process.env.BENCH_CLUSTER_REQUESTS ?? 200);
const CLIENTS = 8;
const PROJECT = "acme/cluster-bench";
const headers = { "content-type": "application/json", authorization: basic(KEY_ADMIN) };

async function countCalls(url: string): Promise<number> {
  const res = await fetch(`${url}/calls/query_stats`, { method: "POST", headers, body: JSON.stringify({ project_id: PROJECT }) });
  return res.ok ? ((await res.json()) as { count: number }).count : 0;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bench-cluster-"));
  const cluster = await startCluster(dir);
  const kafka = await startMockKafka(3);
  const database = "bench_cluster";
  const ch11 = cluster.nodes[0]!;
  const topology = await startTopology({ clickhouseUrl: ch11.url, cluster: cluster.cluster, database, kafkaBrokers: kafka.brokers, logDir: join(dir, "services") });
  try {
    const bodies = Array.from({ length: REQUESTS }, (_, n) => new Uint8Array(Buffer.from(batchBody(PROJECT, n))));
    const send = keptAlivePoster(topology.url, CLIENTS);
    let next = 0;
    let refused = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < REQUESTS) {
          const n = next++;
          for (;;) {
            const res = await send("/call/upsert_batch", headers, bodies[n]!);
            if (res.status === 200) break;
            if (res.status !== 429 && res.status !== 503) throw new Error(`ingest answered ${res.status}`);
            refused++;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      }),
    );
    const acked = performance.now();
    const calls = (REQUESTS * PARTS_PER_REQUEST) / 2;
    while ((await countCalls(topology.url)) < calls) await new Promise((r) => setTimeout(r, 100));
    const queryable = performance.now();
    const parts = calls * 2;
    const reference = clickhouseClientInsertRate(
      ch11,
      database,
      PROJECT,
      "calls_copy",
      "CREATE TABLE calls_copy ENGINE = ReplacingMergeTree(version) ORDER BY (project_id, started_at, id) AS SELECT * FROM calls_local WHERE 0",
    );
    printTable("## Calls upsert_batch, 500 parts/request, 8 clients: 2 ingest + 2 workers (Kafka, 3 brokers) + 1 query, 2 shards × 2 replicas (18.16)", [
      {
        parts,
        "acked parts/s": (parts / ((acked - started) / 1000)).toFixed(0),
        "queryable parts/s": (parts / ((queryable - started) / 1000)).toFixed(0),
        "429/503 retries": refused,
        "clickhouse-client rows/s (one MergeTree table on ch11)": reference.toFixed(0),
      },
    ]);
  } finally {
    await topology.stop();
    await kafka.stop();
    await stopCluster(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
