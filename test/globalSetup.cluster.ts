import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startCluster, stopCluster } from "../scripts/clickhouseCluster.js";
import { startMockKafka } from "./support/mockKafka.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The cluster run: the ClickHouse cluster the services spread their schema over (CLICKHOUSE_CLUSTER). */
    clickhouseCluster?: string;
    /** The cluster run: each node's HTTP interface, shard by shard, replicas in order. */
    clickhouseNodes?: { readonly name: string; readonly shard: number; readonly url: string }[];
  }
}

/**
 * The cluster run: ZooKeeper and four ClickHouse 18.16 servers, 2 shards x 2 replicas (the
 * harness of scripts/clickhouse-cluster.sh), and a Kafka-protocol broker. Every service of the
 * run talks to the first node with CLICKHOUSE_CLUSTER set (test/support/service.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), "tracehouse-cluster-"));
  const state = await startCluster(dir);
  const kafka = await startMockKafka();
  project.provide("clickhouseUrl", state.nodes[0]!.url);
  project.provide("clickhouseCluster", state.cluster);
  project.provide("clickhouseNodes", state.nodes.map(({ name, shard, url }) => ({ name, shard, url })));
  project.provide("kafkaBrokers", kafka.brokers);
  return async () => {
    await kafka.stop();
    await stopCluster(dir);
    rmSync(dir, { recursive: true, force: true });
  };
}
