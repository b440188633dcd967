import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, startTestService, type Client } from "../support/service.js";
import { sleep, until } from "../support/polling.js";
import { startReceiver, type Received } from "./webhookReceiver.js";

/**
 * Alerts evaluated by the worker on calls ingested through the API, posted to a receiver on
 * 127.0.0.1. Two services on one database, each with its worker, evaluator and job runner, as
 * two workers of the Kafka topology: each state change is posted once all the same.
 */
const P = "acme/alerts-webhook";
const ENV = { ALERTS_ALLOWED_HOSTS: "127.0.0.1", ALERTS_EVAL_INTERVAL_MS: "300" };

let first: Awaited<ReturnType<typeof startTestService>>;
let second: Awaited<ReturnType<typeof startTestService>> | null = null;
let api: Client;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
  first = await startTestService(ENV);
  second = await startTestService({ ...ENV, CLICKHOUSE_DATABASE: first.database });
  api = client(first.url);
}, 120_000);
afterAll(async () => {
  await second?.stop();
  await first?.stop();
  await receiver?.close();
});

const iso = (ms: number) => new Date(ms).toISOString();
let n = 0;

/** Calls of `op`, ended now, through the API; `latencyMs` each, failing when `failing`. */
async function ingest(op: string, count: number, { failing = false, latencyMs = 5, usage }: { failing?: boolean; latencyMs?: number; usage?: Record<string, unknown> } = {}) {
  const now = Date.now();
  const batch = Array.from({ length: count }, () => {
    const id = `c-${op}-${n++}`;
    return [
      { mode: "start", req: { start: { project_id: P, id, op_name: op, trace_id: `t-${id}`, started_at: iso(now - latencyMs), attributes: {}, inputs: {} } } },
      { mode: "end", req: { end: { project_id: P, id, ended_at: iso(now), exception: failing ? "boom" : null, summary: usage ? { usage } : {} } } },
    ];
  }).flat();
  await api.json("/call/upsert_batch", { batch });
}

const create = async (body: Record<string, unknown>) => (await api.json<{ id: string }>("/alerts/create", { project_id: P, window_minutes: 5, ...body })).id;
const rules = async () => (await api.json<{ alerts: Record<string, unknown>[] }>("/alerts/query", { project_id: P })).alerts;
const ruleOf = async (id: string) => (await rules()).find((a) => a.id === id)!;
const posts = (path: string): Received[] => receiver.received.filter((r) => r.path === path);

describe("alert webhooks", () => {
  it("posts once into firing and once back to ok for an error_rate rule, and nothing more", async () => {
    const hook = `${receiver.url}/errors`;
    const id = await create({ name: "errors", metric: "error_rate", comparison: "gt", threshold: 0.5, op_names: ["alerting-op"], webhook_url: hook });
    // Calls of other ops do not count.
    await ingest("other-op", 3, { failing: true });
    await until(async () => (await ruleOf(id)).last_evaluated_at !== null, { what: "a first evaluation" });
    await ingest("alerting-op", 3, { failing: true });
    const firing = await until(() => posts("/errors")[0], { what: "the firing post" });
    expect(Object.keys(firing.body).sort()).toEqual(["alert_id", "at", "metric", "name", "project_id", "state", "threshold", "value", "window_minutes"]);
    expect(firing.body).toMatchObject({ alert_id: id, name: "errors", project_id: P, metric: "error_rate", value: 1, threshold: 0.5, state: "firing", window_minutes: 5 });
    expect(Number.isNaN(Date.parse(String(firing.body.at)))).toBe(false);
    expect((await ruleOf(id)).state).toBe("firing");

    await ingest("alerting-op", 9);
    const ok = await until(() => posts("/errors")[1], { what: "the ok post" });
    expect(ok.body).toMatchObject({ alert_id: id, state: "ok", value: 0.25, threshold: 0.5 });
    // Many evaluations later (both workers, every 300 ms), still exactly one post per change.
    await sleep(3_000);
    expect(posts("/errors").map((p) => p.body.state)).toEqual(["firing", "ok"]);
    expect(new Set(posts("/errors").map((p) => p.deliveryId)).size).toBe(2);
    const rule = await ruleOf(id);
    expect(rule).toMatchObject({ state: "ok", last_value: 0.25 });
    expect(rule.history).toEqual([
      { state: "ok", value: 0.25, at: ok.body.at },
      { state: "firing", value: 1, at: firing.body.at },
    ]);

    // A deleted rule is not evaluated any more: no post however its calls go.
    await api.json("/alerts/delete", { project_id: P, id });
    await ingest("alerting-op", 20, { failing: true });
    await sleep(2_000);
    expect(posts("/errors")).toHaveLength(2);
  }, 90_000);

  it("retries a failing webhook and delivers each change once; tokens and latency_p99_ms over ingested calls", async () => {
    const tokens = await create({ name: "tokens", metric: "tokens", comparison: "gt", threshold: 100, op_names: ["llm-op"], webhook_url: `${receiver.url}/flaky-tokens` });
    const latency = await create({ name: "slow", metric: "latency_p99_ms", comparison: "gt", threshold: 1000, op_names: ["slow-op"], webhook_url: `${receiver.url}/latency` });
    await ingest("llm-op", 2, { usage: { "gpt-4o": { prompt_tokens: 60, completion_tokens: 20, total_tokens: 80 } } });
    await ingest("slow-op", 3, { latencyMs: 1500 });
    await ingest("slow-op", 1, { latencyMs: 10 });

    const delivered = await until(() => receiver.ok("/flaky-tokens")[0], { what: "the retried tokens post", timeoutMs: 45_000 });
    expect(delivered.body).toMatchObject({ alert_id: tokens, metric: "tokens", state: "firing", value: 160, threshold: 100 });
    const slow = await until(() => posts("/latency")[0], { what: "the latency post" });
    expect(slow.body).toMatchObject({ alert_id: latency, metric: "latency_p99_ms", state: "firing", value: 1500 });

    await sleep(3_000);
    // One failed attempt, then one success, of the one delivery.
    expect(posts("/flaky-tokens").map((p) => p.status)).toEqual([500, 200]);
    expect(new Set(posts("/flaky-tokens").map((p) => p.deliveryId)).size).toBe(1);
    expect(posts("/latency")).toHaveLength(1);
    expect(await ruleOf(tokens)).toMatchObject({ state: "firing", last_value: 160 });
  }, 90_000);
});
