import { randomBytes } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { untilRead } from "../support/polling.js";
import { client, iso, startTestService } from "../support/service.js";

/**
 * A worker-only process (ROLE=worker, Kafka) serves /health and /metrics on METRICS_PORT, and
 * nothing without it. Both processes run in this test's process, so they share one prom-client
 * registry: this checks what the worker's port answers, not which process counted it.
 */
const T = Date.UTC(2026, 10, 24);
const start = (project: string, id: string) => ({ project_id: project, id, op_name: "op", trace_id: "t", started_at: iso(T), attributes: {}, inputs: {} });

const sampleOf = (text: string, name: string, labels: Record<string, string>) =>
  text
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);

describe("a worker-only process on Kafka", () => {
  it("serves /health and /metrics on METRICS_PORT: its batches, rows written and consumer lag", async () => {
    const unique = randomBytes(4).toString("hex");
    const kafka = { KAFKA_BROKERS: inject("kafkaBrokers"), KAFKA_TOPIC: `metrics-${unique}`, KAFKA_GROUP_ID: `g-${unique}`, BATCH_MAX_WAIT_MS: "100" };
    const ingest = await startTestService({ ...kafka, ROLE: "ingest,query" });
    const worker = await startTestService({ ...kafka, ROLE: "worker", METRICS_PORT: "0", CLICKHOUSE_DATABASE: ingest.database });
    const silent = await startTestService({ ...kafka, ROLE: "worker", KAFKA_GROUP_ID: `other-${unique}`, CLICKHOUSE_DATABASE: ingest.database });
    try {
      expect(silent.url).toBeNull();
      expect(worker.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${worker.url}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: "ok", clickhouse: true, queue: true });
      // It serves no API.
      expect((await client(worker.url).post("/call/start", { start: start("acme/w", "x") })).status).toBe(404);

      const before = await (await fetch(`${worker.url}/metrics`)).text();
      const api = client(ingest.url);
      for (let i = 0; i < 3; i++) expect((await api.post("/call/start", { start: start("acme/w", `c${i}`) })).status).toBe(200);
      const topic = { topic: kafka.KAFKA_TOPIC };
      // Both workers (two groups) store each call: 6 rows between them (counted once each insert is answered).
      const rows = (t: string) => sampleOf(t, "clickhouse_rows_written_total", { table: "calls" }) - sampleOf(before, "clickhouse_rows_written_total", { table: "calls" });
      const text = await untilRead(async () => (await fetch(`${worker.url}/metrics`)).text(), (t) => rows(t) >= 6, { timeoutMs: 60_000, everyMs: 100 });
      expect(sampleOf(text, "worker_batch_events_sum", topic) - sampleOf(before, "worker_batch_events_sum", topic)).toBe(6);
      expect(sampleOf(text, "clickhouse_rows_written_total", { table: "calls" }) - sampleOf(before, "clickhouse_rows_written_total", { table: "calls" })).toBe(6);
      expect(text).toMatch(new RegExp(`^queue_consumer_lag_messages\\{topic="${kafka.KAFKA_TOPIC}",partition="\\d+"[^}]*\\} 0$`, "m"));
    } finally {
      await silent.stop();
      await worker.stop();
      await ingest.stop();
    }
  });
});
