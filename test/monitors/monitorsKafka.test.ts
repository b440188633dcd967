import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createJudge, createObject } from "../evaluations/support.js";
import { sleep, until, untilRead } from "../support/polling.js";
import { client, startTestService, type Client } from "../support/service.js";

/**
 * Monitors on the Kafka path: an ingest-and-query process and two worker processes in one
 * consumer group (the suite's broker, a topic and group of this file's own), all on one
 * database. The calls reach the workers through Kafka; both workers sweep and score (the
 * sweep job's claim lets one runner run each slot), and each matching call has one score (feedback).
 * A sweep interval of 5 s: its window (15 s back) outlasts the job runners' claims on a busy
 * machine (at 1 s a window is 7 s, and three processes on two loaded cores can fall behind it).
 */
const P = "acme/monitors-kafka";
const unique = randomBytes(4).toString("hex");
const KAFKA = { KAFKA_BROKERS: inject("kafkaBrokers"), KAFKA_TOPIC: `monitors-${unique}`, KAFKA_GROUP_ID: `g-${unique}`, BATCH_MAX_WAIT_MS: "100", MONITORS_SWEEP_INTERVAL_MS: "5000" };

let ingest: Awaited<ReturnType<typeof startTestService>>;
const workers: Awaited<ReturnType<typeof startTestService>>[] = [];
let api: Client;

beforeAll(async () => {
  ingest = await startTestService({ ...KAFKA, ROLE: "ingest,query" });
  for (let i = 0; i < 2; i++) workers.push(await startTestService({ ...KAFKA, ROLE: "worker", CLICKHOUSE_DATABASE: ingest.database }));
  api = client(ingest.url);
}, 120_000);
afterAll(async () => {
  for (const w of workers) await w.stop();
  await ingest?.stop();
});

interface Feedback {
  weave_ref: string;
  call_ref: string | null;
  trigger_ref: string | null;
}

describe("monitors on Kafka", () => {
  it("gives each matching call one score with two workers in one group, and no other call one", async () => {
    const judge = await createJudge(api, P);
    const monitor = await createObject(api, P, "kafka-monitor", {
      _type: "Monitor", _class_name: "Monitor", _bases: ["Object", "BaseModel"], name: "kafka-monitor", description: "", sampling_rate: 1,
      scorers: [judge], call_filter: { op_names: [`weave:///${P}/op/watched:*`] }, active: true,
    });
    await sleep(5_500);
    const now = Date.now();
    const calls = [["k-1", "watched"], ["k-2", "watched"], ["k-3", "watched"], ["k-other", "unwatched"]] as const;
    const batch = calls.flatMap(([id, op]) => [
      { mode: "start", req: { start: { project_id: P, id, op_name: `weave:///${P}/op/${op}:0123abcd`, trace_id: `t-${id}`, started_at: new Date(now - 5).toISOString(), attributes: {}, inputs: { question: "1+1=" } } } },
      { mode: "end", req: { end: { project_id: P, id, ended_at: new Date(now).toISOString(), output: "2", summary: {} } } },
    ]);
    expect((await api.post("/call/upsert_batch", { batch })).status).toBe(200);

    const scores = async () => (await api.json<{ result: Feedback[] }>("/feedback/query", { project_id: P })).result.filter((f) => f.trigger_ref === monitor);
    // The first score also starts the built-in model's threads: allow for it.
    let seen: Feedback[] = [];
    await until(async () => (seen = await scores()).length >= 3, { what: () => `the three scores (seen: ${seen.map((f) => f.weave_ref).join(", ") || "none"})`, timeoutMs: 150_000, everyMs: 1_000 });
    // More sweeps of both workers over the same calls: still one score each, none for the other op.
    await sleep(6_000);
    const final = await scores();
    expect(final.map((f) => f.weave_ref.split("/").pop()).sort()).toEqual(["k-1", "k-2", "k-3"]);
    // The score calls travel through Kafka too (written by the workers): the ones the scores name,
    // each once, even when both workers ran the judge on one call (docs/resources.md, "Several workers").
    const scoreCallIds = async () => (await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, filter: { op_names: ["judge.score"] }, columns: ["id"] })).map((c) => c.id).sort();
    const named = final.map((f) => f.call_ref!.split("/").pop()!).sort();
    expect(await untilRead(scoreCallIds, (ids) => ids.length >= named.length)).toEqual(named);
  }, 240_000);
});
