import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivedUuidv7 } from "../../services/ids.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { JobsRepository } from "../../services/store/jobs/jobsRepository.js";
import type { MonitorSpec } from "../../services/worker/monitors/monitorSpec.js";
import { MONITOR_SWEEP_JOB } from "../../services/worker/monitors/monitorSweeper.js";
import { ScoringQueue } from "../../services/worker/monitors/scoringQueue.js";
import { createJudge, createObject } from "../evaluations/support.js";
import { storeOn } from "../support/database.js";
import { until } from "../support/polling.js";
import { client, startTestService, type Client } from "../support/service.js";

/**
 * The monitors' bounded scoring queue (MONITORS_QUEUE_SIZE) when a sweep finds more calls than
 * it holds: the oldest items are dropped and counted in `monitor_scoring_dropped_total`, the
 * newest are scored, and ingest is untouched (every call stored). The calls end a few minutes
 * ahead, so that only the sweep forced here (its window reaching past them) finds them and
 * the service's own sweeps (windows ending now) push nothing: what is dropped is this sweep's.
 */
const P = "acme/monitor-queue";
const CALLS = 30;
const QUEUE = 2;

let service: Awaited<ReturnType<typeof startTestService>>;
let api: Client;
let store: ClickHouseStore;

beforeAll(async () => {
  service = await startTestService({ MONITORS_QUEUE_SIZE: String(QUEUE), MONITORS_SWEEP_INTERVAL_MS: "1000" });
  api = client(service.url);
  store = await storeOn(service.database);
}, 120_000);
afterAll(async () => {
  await store?.close();
  await service?.stop();
});

const droppedTotal = async () => Number(/^monitor_scoring_dropped_total (\S+)$/m.exec(await (await fetch(`${service.url}/metrics`)).text())?.[1] ?? "NaN");

describe("the monitors' scoring queue", () => {
  it("drops its oldest items when full and hands out the rest oldest first", () => {
    const spec = { ref: "weave:///acme/p/object/m:1" } as MonitorSpec;
    const queue = new ScoringQueue(QUEUE);
    expect(queue.push(["a", "b", "c"].map((callId, i) => ({ monitor: spec, callId, endedAt: i })))).toBe(1);
    expect(queue.push([{ monitor: spec, callId: "c", endedAt: 2 }])).toBe(0);
    expect([queue.shift()?.callId, queue.shift()?.callId, queue.shift()]).toEqual(["b", "c", null]);
  });

  it("overflowing on a sweep: the oldest calls dropped and counted, the newest scored, every call stored", async () => {
    const judge = await createJudge(api, P);
    const monitor = await createObject(api, P, "flood", {
      _type: "Monitor", _class_name: "Monitor", _bases: ["Object", "BaseModel"], name: "flood", description: "", sampling_rate: 1,
      scorers: [judge], call_filter: { op_names: [`weave:///${P}/op/flood:*`] }, active: true,
    });
    const ahead = Date.now() + 5 * 60_000;
    const ids = Array.from({ length: CALLS }, (_, i) => `q-${String(i).padStart(2, "0")}`);
    const batch = ids.flatMap((id, i) => [
      { mode: "start", req: { start: { project_id: P, id, op_name: `weave:///${P}/op/flood:0123abcd`, trace_id: `t-${id}`, started_at: new Date(ahead + i).toISOString(), attributes: {}, inputs: { question: "1+1=" } } } },
      { mode: "end", req: { end: { project_id: P, id, ended_at: new Date(ahead + i + 1).toISOString(), output: "2", summary: {} } } },
    ]);
    expect((await api.post("/call/upsert_batch", { batch })).status).toBe(200);
    const stored = await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, filter: { op_names: [`weave:///${P}/op/flood:*`] }, columns: ["id"] });
    expect(stored.map((c) => c.id).sort()).toEqual(ids);

    const before = await droppedTotal();
    const jobId = derivedUuidv7(Date.now(), `queue-test-${Math.random()}`);
    const jobs = new JobsRepository(store);
    await jobs.record([{ id: jobId, type: MONITOR_SWEEP_JOB, serial_key: "monitors", input: { from: 0, to: (ahead + 60_000) * 1000 }, submitted_at: Date.now() * 1000 }]);
    const job = await until(async () => {
      const j = await jobs.get(jobId);
      return j?.status === "completed" ? j : null;
    }, { what: "the forced sweep", timeoutMs: 60_000 });
    expect(job.output).toEqual({ [monitor]: { matched: CALLS, sampled: CALLS, dropped: CALLS - QUEUE } });
    expect(await droppedTotal()).toBe(before + CALLS - QUEUE);

    // The queue kept the two calls that ended last; the judge scores those and no other.
    const scored = await until(async () => {
      const { result } = await api.json<{ result: { weave_ref: string; trigger_ref: string | null }[] }>("/feedback/query", { project_id: P });
      const calls = result.filter((f) => f.trigger_ref === monitor).map((f) => f.weave_ref.split("/").pop()!);
      return calls.length >= QUEUE ? calls.sort() : null;
    }, { what: "the scores of the kept calls", timeoutMs: 120_000, everyMs: 500 });
    expect(scored).toEqual(ids.slice(-QUEUE));
  }, 240_000);
});
