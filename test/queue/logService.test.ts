import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { DurableLogQueue } from "../../services/queue/durableLog/durableLogQueue.js";
import { processLogDir } from "../../services/queue/durableLog/storage/files.js";
import { traceEventsTopic, type CallStartEvent } from "../../services/queue/events.js";
import { untilRead } from "../support/polling.js";
import { client, iso, startTestService, type Client } from "../support/service.js";

/** The whole service on the durable log, as every service test runs it: what only this mode does. */
const T = Date.UTC(2026, 10, 7);
const start = (project: string, id: string, extra: Record<string, unknown> = {}) => ({
  project_id: project, id, op_name: "op", trace_id: "t", started_at: iso(T), attributes: {}, inputs: {}, ...extra,
});

const until = <V>(read: () => Promise<V>, done: (value: V) => boolean): Promise<V> => untilRead(read, done, { everyMs: 25 });

const callIds = async (api: Client, project: string) => (await api.lines<{ id: string }>("/calls/stream_query", { project_id: project, columns: ["id"] })).map((c) => c.id).sort();

describe("the service on the durable log", () => {
  it("acknowledges writes once logged and stores them: parts of a call merged in any order", async () => {
    const service = await startTestService({ BATCH_MAX_WAIT_MS: "20" });
    const api = client(service.url);
    const P = "acme/log";
    try {
      expect((await api.post("/call/end", { end: { project_id: P, id: "a", ended_at: iso(T + 500), output: 7, summary: {} } })).status).toBe(200);
      expect((await api.post("/call/upsert_batch", { batch: [{ mode: "start", req: { start: start(P, "a") } }, { mode: "start", req: { start: start(P, "b", { parent_id: "a" }) } }] })).status).toBe(200);
      const calls = await until(
        () => api.lines<{ id: string; output: unknown }>("/calls/stream_query", { project_id: P, columns: ["id", "output"] }),
        (rows) => rows.length === 2 && rows.some((r) => r.output === 7),
      );
      expect(calls.map((c) => [c.id, c.output])).toEqual([["a", 7], ["b", null]]);
    } finally {
      await service.stop();
    }
  });

  it("answers 429 with Retry-After beyond LOG_MAX_BYTES not yet stored, and stores exactly what it acknowledged", async () => {
    // The worker waits a minute to fill a batch: the first request stays in the log.
    const service = await startTestService({ LOG_MAX_BYTES: "2000", BATCH_MAX_WAIT_MS: "60000", BATCH_MAX_EVENTS: "100000" });
    const api = client(service.url);
    const P = "acme/log-full";
    const request = (r: number) => ({ batch: Array.from({ length: 10 }, (_, i) => ({ mode: "start", req: { start: start(P, `r${r}-${i}`, { inputs: { text: "x".repeat(200) } }) } })) });
    const first = await api.post("/call/upsert_batch", request(0)); // alone in the log: admitted whatever its size
    expect(first.status).toBe(200);
    const second = await api.post("/call/upsert_batch", request(1));
    expect(second.status).toBe(429);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThan(0);
    await service.stop(); // drains the log into ClickHouse
    const reader = await startTestService({ CLICKHOUSE_DATABASE: service.database });
    try {
      expect(await callIds(client(reader.url), P)).toEqual(Array.from({ length: 10 }, (_, i) => `r0-${i}`).sort());
    } finally {
      await reader.stop();
    }
  });

  it("process 0 takes over the log of a process beyond PROCESSES and stores what it held", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "log-adopt-"));
    const topic = traceEventsTopic("tracehouse.events");
    const orphanDir = processLogDir(dataDir, topic.name, 1);
    const left = await DurableLogQueue.open(topic, {
      dir: orphanDir, maxLogBytes: 1 << 20, maxPendingEvents: 100, maxPendingBytes: 1 << 20, maxBatchEvents: 100, maxBatchBytes: 1 << 20, maxWaitMs: 1, log: pino({ level: "silent" }),
    });
    const P = "acme/log-adopt";
    const event = (id: string): CallStartEvent => ({
      kind: "call_start", project_id: P, id, trace_id: "t", parent_id: null, thread_id: null, turn_id: null, op_name: "op", display_name: null,
      started_at: T * 1000, attributes: {}, inputs: {}, otel_dump: null, wb_user_id: "alice", wb_run_id: null, wb_run_step: null,
    });
    await left.publish([event("left-1"), event("left-2")]);
    await left.shutdown(); // its worker never ran: the records stay in its log
    const service = await startTestService({ DATA_DIR: dataDir, BATCH_MAX_WAIT_MS: "20" });
    try {
      expect(existsSync(orphanDir)).toBe(false);
      const api = client(service.url);
      expect(await until(() => callIds(api, P), (ids) => ids.length === 2)).toEqual(["left-1", "left-2"]);
    } finally {
      await service.stop();
    }
  });
});
