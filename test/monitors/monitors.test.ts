import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivedUuidv7 } from "../../services/ids.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { JobsRepository } from "../../services/store/jobs/jobsRepository.js";
import { sampled } from "../../services/worker/monitors/monitorSpec.js";
import { MONITOR_SWEEP_JOB } from "../../services/worker/monitors/monitorSweeper.js";
import { BASE_MODEL, createJudge, createObject, llmModel } from "../evaluations/support.js";
import { storeOn } from "../support/database.js";
import { sleep, until } from "../support/polling.js";
import { client, startTestService, type Client } from "../support/service.js";

/**
 * Monitors published as the Weave SDK publishes them, scored by the worker with the built-in
 * model as the judge. Two services on one database, each with its worker (sweeper, job runner,
 * scoring queue), as two workers of the Kafka topology: each call is scored once all the same.
 * A short sweep interval (MONITORS_SWEEP_INTERVAL_MS) keeps the file quick.
 */
const P = "acme/monitors";
const ENV = { MONITORS_SWEEP_INTERVAL_MS: "1000" };

let first: Awaited<ReturnType<typeof startTestService>>;
let second: Awaited<ReturnType<typeof startTestService>> | null = null;
let api: Client;
let store: ClickHouseStore;
let judge: string;

beforeAll(async () => {
  first = await startTestService(ENV);
  second = await startTestService({ ...ENV, CLICKHOUSE_DATABASE: first.database });
  api = client(first.url);
  store = await storeOn(first.database);
  judge = await createJudge(api, P);
}, 120_000);
afterAll(async () => {
  await store?.close();
  await second?.stop();
  await first?.stop();
});

interface Feedback {
  id: string;
  weave_ref: string;
  feedback_type: string;
  payload: Record<string, unknown>;
  runnable_ref: string | null;
  call_ref: string | null;
  trigger_ref: string | null;
}

const op = (name: string) => `weave:///${P}/op/${name}:0123abcd`;
const callRef = (id: string) => `weave:///${P}/call/${id}`;

function monitor(name: string, fields: { ops?: string[]; query?: unknown; rate?: number; scorers?: string[]; active?: boolean }) {
  return createObject(api, P, name, {
    _type: "Monitor", _class_name: "Monitor", _bases: ["Object", "BaseModel"], name, description: "made by a test",
    sampling_rate: fields.rate ?? 1, scorers: fields.scorers ?? [judge],
    call_filter: { op_names: (fields.ops ?? []).map((o) => `weave:///${P}/op/${o}:*`), ...(fields.query ? { query: fields.query } : {}) },
    active: fields.active ?? true,
  });
}

/** Calls of `opName`, ended now, through the API. */
async function ingest(opName: string, ids: string[], inputs: Record<string, unknown> = { question: "1+1=" }) {
  const now = Date.now();
  const batch = ids.flatMap((id) => [
    { mode: "start", req: { start: { project_id: P, id, op_name: op(opName), trace_id: `t-${id}`, started_at: new Date(now - 5).toISOString(), attributes: {}, inputs } } },
    { mode: "end", req: { end: { project_id: P, id, ended_at: new Date(now).toISOString(), output: "2", summary: {} } } },
  ]);
  await api.json("/call/upsert_batch", { batch });
}

const scoresOf = async (monitorRef: string): Promise<Feedback[]> =>
  (await api.json<{ result: Feedback[] }>("/feedback/query", { project_id: P, limit: 10_000 })).result.filter((f) => f.trigger_ref === monitorRef);
const scoredCalls = async (monitorRef: string) => (await scoresOf(monitorRef)).map((f) => f.weave_ref.split("/").pop()!);
const status = (monitorRef: string) =>
  api.json<{ active: boolean; scored: number; last_scored_at: string | null; unsupported_scorers: { ref: string; reason: string }[]; filter_error: string | null }>(
    "/monitors/status", { project_id: P, monitor_ref: monitorRef });

/** A sweep of the active monitors over everything that ended so far, recorded as the sweeper would, with an id of its own. */
async function forceSweep(): Promise<void> {
  const id = derivedUuidv7(Date.now(), `forced-${Math.random()}`);
  await new JobsRepository(store).record([{
    id, type: MONITOR_SWEEP_JOB, serial_key: "monitors", input: { from: 0, to: Date.now() * 1000 }, submitted_at: Date.now() * 1000,
  }]);
  await until(async () => (await new JobsRepository(store).get(id))?.status === "completed", { what: "the forced sweep", timeoutMs: 30_000 });
}

describe("monitors", () => {
  it("scores a matching call once (feedback with the documented fields), and not calls of other ops or failing the query", async () => {
    const ref = await monitor("english", { ops: ["answer"], query: { $expr: { $eq: [{ $getField: "inputs.lang" }, { $literal: "en" }] } } });
    await sleep(1_500);
    await ingest("answer", ["m-en"], { question: "1+1=", lang: "en" });
    await ingest("answer", ["m-fr"], { question: "1+1=", lang: "fr" });
    await ingest("other", ["m-other"], { question: "1+1=", lang: "en" });
    const [score] = await until(async () => {
      const found = await scoresOf(ref);
      return found.length > 0 ? found : null;
      // The first score also starts the built-in model's threads in the scoring process: allow for it.
    }, { what: "the score of the matching call", timeoutMs: 120_000 });
    expect(score).toMatchObject({ weave_ref: callRef("m-en"), feedback_type: "wandb.runnable.judge", runnable_ref: judge, trigger_ref: ref });
    expect(Object.keys(score!.payload)).toEqual(["output"]);
    const scoreId = score!.call_ref!.split("/").pop()!;
    const [scoreCall] = await api.lines<{ op_name: string; output: unknown; inputs: Record<string, unknown> }>("/calls/stream_query", { project_id: P, filter: { call_ids: [scoreId] } });
    expect(scoreCall).toMatchObject({ op_name: "judge.score", inputs: { self: judge, question: "1+1=", output: "2" } });
    expect(score!.payload.output).toEqual(scoreCall!.output);

    // Several sweeps of both workers later, and a forced sweep of everything: still one score, none for the others.
    await sleep(3_000);
    await forceSweep();
    await sleep(2_000);
    expect(await scoredCalls(ref)).toEqual(["m-en"]);
    expect(await status(ref)).toMatchObject({ active: true, scored: 1, unsupported_scorers: [], filter_error: null, last_scored_at: expect.any(String) });
    const metrics = await (await fetch(`${first.url}/metrics`)).text();
    expect(metrics).toMatch(/monitor_scoring_backlog/);
    expect(metrics).toMatch(/monitor_scoring_dropped_total/);
  }, 180_000);

  it("samples by call id near its rate, and decides the same calls again on another sweep", async () => {
    const ref = await monitor("half", { ops: ["sampled"], rate: 0.5 });
    await sleep(1_500);
    const ids = Array.from({ length: 40 }, (_, i) => `s-${i}`);
    await ingest("sampled", ids);
    const expected = ids.filter((id) => sampled(id, 0.5)).sort();
    expect(expected.length).toBeGreaterThanOrEqual(8);
    expect(expected.length).toBeLessThanOrEqual(32);
    await until(async () => (await scoredCalls(ref)).length >= expected.length, { what: "the sampled calls' scores", timeoutMs: 150_000, everyMs: 1_000 });
    await forceSweep();
    await sleep(2_000);
    expect((await scoredCalls(ref)).sort()).toEqual(expected);
  }, 240_000);

  it("scores nothing new once its latest version is inactive", async () => {
    const active = await monitor("switch", { ops: ["switched"] });
    await sleep(1_500);
    await ingest("switched", ["d-before"]);
    await until(async () => (await scoredCalls(active)).length === 1, { what: "the score before deactivation", timeoutMs: 60_000 });
    const inactive = await monitor("switch", { ops: ["switched"], active: false });
    expect(inactive).not.toBe(active);
    await sleep(2_500);
    await ingest("switched", ["d-after"]);
    await sleep(5_000);
    expect(await scoredCalls(active)).toEqual(["d-before"]);
    expect(await scoredCalls(inactive)).toEqual([]);
    expect((await status(active)).active).toBe(false);
    expect((await status(inactive)).active).toBe(false);
  }, 120_000);

  it("reports the scorers it cannot run, and runs the others", async () => {
    const model = await createObject(api, P, "not-a-scorer", llmModel(BASE_MODEL, []));
    const missing = `weave:///${P}/object/no-such-scorer:0000`;
    const ref = await monitor("mixed", { ops: ["mixed"], scorers: [model, judge, missing] });
    const { unsupported_scorers } = await status(ref);
    expect(unsupported_scorers.map((u) => u.ref)).toEqual([model, missing]);
    expect(unsupported_scorers[0]!.reason).toMatch(/not a LLMAsAJudgeScorer/);
    expect(unsupported_scorers[1]!.reason).toMatch(/names no object/);
    await sleep(1_500);
    await ingest("mixed", ["x-1"]);
    const scores = await until(async () => {
      const found = await scoresOf(ref);
      return found.length > 0 ? found : null;
    }, { what: "the judge's score", timeoutMs: 60_000 });
    expect(scores.map((s) => s.runnable_ref)).toEqual([judge]);
    const unknown = await api.post("/monitors/status", { project_id: P, monitor_ref: `weave:///${P}/object/nothing:1234` });
    expect(unknown.status).toBe(404);
  }, 120_000);
});
