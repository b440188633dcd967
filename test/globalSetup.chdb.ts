import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startMockKafka } from "./support/mockKafka.js";
import "./globalSetup.js";

/**
 * The compatibility run: no server to start, each test process embeds ClickHouse 26.7
 * (chdb) with its data under one temporary directory of this run, removed at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), "tracehouse-chdb-"));
  const kafka = await startMockKafka();
  project.provide("chdbDir", dir);
  project.provide("kafkaBrokers", kafka.brokers);
  return async () => {
    await kafka.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
