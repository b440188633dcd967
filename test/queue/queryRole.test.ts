import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, startTestService, waitStored } from "../support/service.js";

/**
 * A query process (ROLE=query, no Kafka) beside the one-box process whose durable log lives
 * in the same DATA_DIR: it neither writes calls nor stores them, so it opens no log. Were it
 * to open one, the one-box process's lock on it would refuse its start (and, the other way
 * round, a query process started first would keep the writer out).
 */
const P = "acme/query-role";

describe("ROLE=query without Kafka", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "query-role-"));
  let writer: Awaited<ReturnType<typeof startTestService>>;

  beforeAll(async () => {
    writer = await startTestService({ DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await writer?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = (id: string) => ({ mode: "start", req: { start: { project_id: P, id, op_name: "op", trace_id: id, started_at: new Date().toISOString(), attributes: {}, inputs: {} } } });
  const ids = async (url: string) => (await client(url).lines<{ id: string }>("/calls/stream_query", { project_id: P, columns: ["id"] })).map((c) => c.id).sort();

  it("starts beside the writer on its DATA_DIR, answers from the shared database, and stops leaving the writer's log in use", async () => {
    await client(writer.url).json("/call/upsert_batch", { batch: [start("before")] });
    await waitStored(writer.url);
    const reader = await startTestService({ ROLE: "query", DATA_DIR: dataDir, CLICKHOUSE_DATABASE: writer.database });
    try {
      expect(await ids(reader.url)).toEqual(["before"]);
    } finally {
      await reader.stop();
    }
    // The writer's log goes on taking and storing writes after the reader is gone.
    await client(writer.url).json("/call/upsert_batch", { batch: [start("after")] });
    await waitStored(writer.url);
    expect(await ids(writer.url)).toEqual(["after", "before"]);
  });
});
