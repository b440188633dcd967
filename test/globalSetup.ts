import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startLocalClickHouse } from "../services/store/localServer.js";
import { startMockKafka } from "./support/mockKafka.js";

declare module "vitest" {
  export interface ProvidedContext {
    clickhouseUrl: string;
    kafkaBrokers: string;
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
