import { randomBytes } from "node:crypto";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { alterClusterOf, startCluster, stopCluster, superviseCluster } from "../scripts/clickhouseCluster.js";
import { StoreUnavailableError } from "../services/errors.js";
import { OWN_SERVICES_ON_CLUSTER } from "./clusterRun.js";
import { startMockKafka } from "./support/mockKafka.js";
import { startTopology } from "./support/topology.js";

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

/** The brokers of the mock Kafka the topology's processes share. */
const KAFKA_BROKERS = 3;

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
  const dir = mkdtempSync(join(tmpdir(), "tracehouse-cluster-"));
  const state = await startCluster(dir);
  const supervisor = superviseCluster(dir, (name, why) => console.error(`[cluster] ${name} started again: ${why}`));
  const kafka = await startMockKafka(KAFKA_BROKERS);
  const logDir = join(dir, "services");
  mkdirSync(logDir);
  const start = () =>
    startTopology({ clickhouseUrl: state.nodes[0]!.url, cluster: state.cluster, alterCluster: alterClusterOf(state.cluster), database: `s_${randomBytes(6).toString("hex")}`, kafkaBrokers: kafka.brokers, logDir });
  const topology = await start()
    .catch(async (err: unknown) => {
      // 18.16 can crash on the first ON CLUSTER statement when its distributed-DDL worker lost
      // its ZooKeeper session in the seconds after the start (the statement finds no session):
      // the crashed node is started again, and the topology on a fresh database.
      if (!(err instanceof StoreUnavailableError)) throw err;
      await startCluster(dir);
      return start();
    })
    .catch(async (err: unknown) => {
      await kafka.stop();
      await supervisor.stop();
      await stopCluster(dir);
      // Kept for its processes' logs, named in the error.
      throw err;
    });
  project.provide("clickhouseUrl", state.nodes[0]!.url);
  project.provide("clickhouseCluster", state.cluster);
  project.provide("clickhouseAlterCluster", alterClusterOf(state.cluster));
  project.provide("clickhouseNodes", state.nodes.map(({ name, shard, url }) => ({ name, shard, url })));
  project.provide("kafkaBrokers", kafka.brokers);
  project.provide("serviceTopology", { url: topology.url, database: topology.database });
  return async () => {
    await topology.stop();
    await kafka.stop();
    await supervisor.stop();
    await stopCluster(dir);
    rmSync(dir, { recursive: true, force: true });
  };
}
