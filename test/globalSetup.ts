import { mkdtempSync, readFileSync, rmSync, statfsSync } from "node:fs";
import { freemem, tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startLocalClickHouse, type LocalClickHouse, type ServerExit } from "../services/store/localServer.js";
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
  const clickhouse = await superviseClickHouse(dir);
  const kafka = await startMockKafka();
  project.provide("clickhouseUrl", clickhouse.url);
  project.provide("kafkaBrokers", kafka.brokers);
  return async () => {
    await kafka.stop();
    await clickhouse.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}

/**
 * The suite's ClickHouse server, started again on the same ports and data if it exits before the
 * run ends, once the way it ended is printed: every file shares it, so a server gone for whatever
 * reason (a crash, the kernel's OOM killer) would fail every file after it, telling nothing of why.
 * The files running at that moment still fail; the ones after run.
 */
async function superviseClickHouse(dir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  let server = await startLocalClickHouse(dir);
  let stopping = false;
  const watch = (running: LocalClickHouse): void => {
    void running.exited.then(async (how) => {
      if (stopping) return;
      console.error(exitReport(running, how));
      try {
        server = await startLocalClickHouse(dir, { http: running.httpPort, tcp: running.tcpPort });
        console.error(`[suite ClickHouse] started again at ${server.url}`);
        watch(server);
      } catch (err) {
        console.error(`[suite ClickHouse] could not start again: ${String(err)}`);
      }
    });
  };
  watch(server);
  return {
    url: server.url,
    stop: async () => {
      stopping = true;
      await server.stop();
    },
  };
}

const REPORTED_LOG_LINES = 30;

/** How the server ended, the end of its error log (less the clients' resets), and the machine's free memory and disk. */
function exitReport(server: LocalClickHouse, how: ServerExit): string {
  const errorLog = join(server.logDir, "error.log");
  let log: string;
  try {
    log = readFileSync(errorLog, "utf8");
  } catch {
    log = "(no error log)";
  }
  const lines = log.split("\n").filter((line) => line && !line.includes("Connection reset by peer"));
  const disk = statfsSync(server.logDir);
  return [
    `[suite ClickHouse] the server at ${server.url} exited during the run: code ${how.code}, signal ${how.signal}, at ${new Date().toISOString()}`,
    `[suite ClickHouse] free memory ${Math.round(freemem() / 2 ** 20)} MiB, free disk ${Math.round((disk.bavail * disk.bsize) / 2 ** 20)} MiB`,
    `[suite ClickHouse] the end of ${errorLog}:`,
    ...lines.slice(-REPORTED_LOG_LINES),
  ].join("\n");
}
