import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, startTestService, type Client } from "../support/service.js";
import { completeBatchJson, newRetryId, rawPost, remoteHttpHeaders, startJson, v2Path, type RawAnswer, type ReadCall } from "./sdk.js";

/**
 * `X-Weave-Retry-Id`: the SDK sends one value on every attempt of one logical request. A
 * repeat is applied once and answered as the first attempt was, whether it reaches the same
 * process or another one (two services on one database stand for two processes: each has
 * its own memory and queue).
 */
let a: Awaited<ReturnType<typeof startTestService>>;
let b: Awaited<ReturnType<typeof startTestService>>;
let api: Client;
beforeAll(async () => {
  a = await startTestService();
  b = await startTestService({ CLICKHOUSE_DATABASE: a.database });
  api = client(a.url);
});
afterAll(async () => {
  await b.stop();
  await a.stop();
});

const P = "acme/sdk-retry";
const at = (s: number) => `2026-11-21T15:00:${String(s).padStart(2, "0")}.000000Z`;
/** The same request to the first process twice, then to the second. */
async function thrice(path: string, body: string, retryId: string): Promise<RawAnswer[]> {
  const headers = remoteHttpHeaders(retryId);
  return [await rawPost(a.url, path, body, headers), await rawPost(a.url, path, body, headers), await rawPost(b.url, path, body, headers)];
}
const bodies = (answers: RawAnswer[]) => answers.map((r) => ({ status: r.status, body: JSON.parse(r.text) as unknown }));
const count = (filter: Record<string, unknown>) => api.json<{ count: number }>("/calls/query_stats", { project_id: P, filter });

describe("a retried call start without an id", () => {
  const start = (s: number) => `{"start":${startJson({ project_id: P, id: null, op_name: "op", trace_id: null, parent_id: null, started_at: at(s), inputs: "{}" })}}`;

  it("answers the same generated ids on every attempt and in every process, and starts one call", async () => {
    for (const path of ["/call/start", v2Path(P, "call/start")]) {
      const answers = bodies(await thrice(path, start(1), newRetryId()));
      const first = answers[0]!.body as { id: string; trace_id: string };
      expect(first.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(answers).toEqual([0, 1, 2].map(() => ({ status: 200, body: first })));
      expect(await count({ call_ids: [first.id] })).toEqual({ count: 1 });
      expect(await count({ trace_ids: [first.trace_id] })).toEqual({ count: 1 });
    }
  });

  it("starts a new call for each request without the header, and for another retry id", async () => {
    const plain = { ...remoteHttpHeaders("x") };
    delete (plain as Record<string, string>)["x-weave-retry-id"];
    const one = JSON.parse((await rawPost(a.url, "/call/start", start(2), plain)).text) as { id: string };
    const two = JSON.parse((await rawPost(a.url, "/call/start", start(2), plain)).text) as { id: string };
    const three = JSON.parse((await rawPost(a.url, "/call/start", start(2), remoteHttpHeaders(newRetryId()))).text) as { id: string };
    expect(new Set([one.id, two.id, three.id]).size).toBe(3);
  });

  it("answers the same ids for the starts of a retried upsert_batch", async () => {
    const item = (s: number) => `{"mode":"start","req":${start(s)}}`;
    const answers = bodies(await thrice("/call/upsert_batch", `{"batch":[${item(3)},${item(4)}]}`, newRetryId()));
    const first = answers[0]!.body as { res: { id: string }[] };
    expect(first.res[0]!.id).not.toBe(first.res[1]!.id);
    expect(answers).toEqual([0, 1, 2].map(() => ({ status: 200, body: first })));
    expect(await count({ call_ids: first.res.map((r) => r.id) })).toEqual({ count: 2 });
  });
});

describe("retried writes with ids of their own", () => {
  it("calls/complete: applied once, answered {} each time", async () => {
    const id = "019aa4e5-0000-7000-8000-000000000001";
    const body = completeBatchJson([{ project_id: P, id, trace_id: id, op_name: "op", parent_id: null, started_at: at(5), ended_at: at(6), inputs: "{}", output: "1", summary: "{}" }]);
    expect(bodies(await thrice(v2Path(P, "calls/complete"), body, newRetryId()))).toEqual([0, 1, 2].map(() => ({ status: 200, body: {} })));
    const calls = await api.lines<ReadCall>("/calls/stream_query", { project_id: P, filter: { call_ids: [id] } });
    expect(calls.map((c) => [c.id, c.ended_at])).toEqual([[id, at(6)]]);
  });

  it("calls/delete: the repeat answers the first answer, and the call and its child stay deleted", async () => {
    const root = "019aa4e5-0000-7000-8000-000000000010";
    const child = { project_id: P, id: "019aa4e5-0000-7000-8000-000000000011", trace_id: root, op_name: "op", parent_id: root, started_at: at(8), ended_at: at(9), inputs: "{}", output: "1", summary: "{}" };
    const batch = completeBatchJson([{ ...child, id: root, parent_id: null, started_at: at(7) }, child]);
    expect((await rawPost(a.url, v2Path(P, "calls/complete"), batch, remoteHttpHeaders(newRetryId()))).status).toBe(200);
    const answers = bodies(await thrice("/calls/delete", JSON.stringify({ project_id: P, call_ids: [root] }), newRetryId()));
    expect(answers).toEqual([0, 1, 2].map(() => ({ status: 200, body: { num_deleted: 1 } })));
    expect(await count({ call_ids: [root, child.id] })).toEqual({ count: 0 });
  });
});

describe("retried writes that generate ids or times", () => {
  const feedback = JSON.stringify({ project_id: P, weave_ref: `weave:///${P}/call/c1`, feedback_type: "wandb.reaction.1", payload: { emoji: "👍" } });

  it("feedback/create without an id: one feedback, the same answer (id, created_at) everywhere", async () => {
    const answers = bodies(await thrice("/feedback/create", feedback, newRetryId()));
    expect(answers[0]!.status).toBe(200);
    expect(answers).toEqual([answers[0], answers[0], answers[0]]);
    const stored = await api.json<{ result: { id: string }[] }>("/feedback/query", { project_id: P });
    expect(stored.result.map((f) => f.id)).toEqual([(answers[0]!.body as { id: string }).id]);
  });

  it("joins two attempts that arrive at once in one process", async () => {
    const headers = remoteHttpHeaders(newRetryId());
    const body = feedback.replace("👍", "🎉");
    const [one, two] = await Promise.all([rawPost(a.url, "/feedback/create", body, headers), rawPost(a.url, "/feedback/create", body, headers)]);
    expect(one.text).toBe(two.text);
    const stored = await api.json<{ result: { payload: { emoji: string } }[] }>("/feedback/query", { project_id: P });
    expect(stored.result.filter((f) => f.payload.emoji === "🎉")).toHaveLength(1);
  });

  it("cost/create: the same price ids, one price", async () => {
    const body = JSON.stringify({ project_id: P, costs: { "retry-model": { prompt_token_cost: 0.5, completion_token_cost: 1.5 } } });
    const answers = bodies(await thrice("/cost/create", body, newRetryId()));
    expect(answers[0]!.status).toBe(200);
    expect(answers).toEqual([answers[0], answers[0], answers[0]]);
    const prices = await api.json<{ results: { llm_id: string }[] }>("/cost/query", { project_id: P });
    expect(prices.results.filter((p) => p.llm_id === "retry-model")).toHaveLength(1);
  });

  it("obj/delete: the repeat answers the first num_deleted instead of 404", async () => {
    await api.json("/obj/create", { obj: { project_id: P, object_id: "retry-obj", val: { a: 1 } } });
    const answers = bodies(await thrice("/obj/delete", JSON.stringify({ project_id: P, object_id: "retry-obj" }), newRetryId()));
    expect(answers).toEqual([0, 1, 2].map(() => ({ status: 200, body: { num_deleted: 1 } })));
  });

  it("keeps no answer of a refused attempt: the repeat is applied", async () => {
    const retryId = newRetryId();
    const bad = await rawPost(a.url, "/feedback/create", feedback.replace(`"wandb.reaction.1"`, `""`), remoteHttpHeaders(retryId));
    expect(bad.status).toBe(422);
    const good = await rawPost(b.url, "/feedback/create", feedback.replace("👍", "👀"), remoteHttpHeaders(retryId));
    expect(good.status).toBe(200);
  });
});
