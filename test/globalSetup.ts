import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startLocalClickHouse } from "../services/store/localServer.js";
import { startMockKafka } from "./support/mockKafka.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The real server's HTTP interface (not provided in the chdb run). */
    clickhouseUrl: string;
    kafkaBrokers: string;
    /** The chdb run: where each test process puts its engine's data (see test/support/chdb.ts). */
    chdbDir?: string;
  }
}

/** One real ClickHouse and one Kafka-protocol broker for the whole suite, on free ports. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), "tracehouse-test-"));
  const clickhouse = await startLocalClickHouse(dir);
  const kafka = await startMockKafka();
  project.provide("clickhouseUrl", clickhouse.url);
  project.provide("kafkaBrokers", kafka.brokers);
  return async () => {
    await kafka.stop();
    await clickhouse.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
