import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { alterClusterOf } from "../scripts/clickhouseCluster.js";
import { OWN_SERVICES_ON_CLUSTER } from "./clusterRun.js";
import { SUITE_READ_YOUR_WRITES_WAIT_MS } from "./support/suiteSettings.js";
import { startClusterTopology } from "./support/topology.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The cluster run: the ClickHouse cluster the services spread their schema over (CLICKHOUSE_CLUSTER). */
    clickhouseCluster?: string;
    /** The cluster run: its cluster of one replica per shard, where ALTERs run (CLICKHOUSE_ALTER_CLUSTER). */
    clickhouseAlterCluster?: string;
    /** The cluster run: each node's HTTP interface, shard by shard, replicas in order. */
    clickhouseNodes?: { readonly name: string; readonly shard: number; readonly url: string }[];
    /**
     * The cluster run: the service as separate processes (test/support/topology.ts) behind its
     * routing proxy, on one database; `serviceForFile` hands it to every file.
     */
    serviceTopology?: { readonly url: string; readonly database: string };
  }
}

/**
 * The cluster run: ZooKeeper and four ClickHouse 18.16 servers, 2 shards x 2 replicas (the
 * harness of scripts/clickhouse-cluster.sh), a 3-broker Kafka-protocol mock, and the service
 * as it runs at scale: 2 ingest, 2 worker (one consumer group) and 1 query processes, with
 * CLICKHOUSE_CLUSTER set, behind a proxy that routes ingest operations to the ingest
 * processes. The files of {@link OWN_SERVICES_ON_CLUSTER} start services of their own in
 * their process, on the same cluster. While
 * the run lasts, a node that exits or whose distributed-DDL worker ends is started again
 * (`superviseCluster`), and said so on stderr.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The processes take the suite's read-your-writes wait from this environment (test/support/suiteSettings.ts).
  process.env.READ_YOUR_WRITES_WAIT_MS ??= SUITE_READ_YOUR_WRITES_WAIT_MS;
  const dir = mkdtempSync(join(tmpdir(), "tracehouse-cluster-"));
  // Kept when the start fails, for its processes' logs, named in the error.
  const { cluster, kafkaBrokers, topology, stop } = await startClusterTopology(dir);
  project.provide("clickhouseUrl", cluster.nodes[0]!.url);
  project.provide("clickhouseCluster", cluster.cluster);
  project.provide("clickhouseAlterCluster", alterClusterOf(cluster.cluster));
  project.provide("clickhouseNodes", cluster.nodes.map(({ name, shard, url }) => ({ name, shard, url })));
  project.provide("kafkaBrokers", kafkaBrokers);
  project.provide("serviceTopology", { url: topology.url, database: topology.database });
  return async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
