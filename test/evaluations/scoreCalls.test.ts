import { describe, expect, it } from "vitest";
import { until } from "../jobs/support.js";
import { client, KEY_ACME, startTestService } from "../support/service.js";
import { evaluationFile, evaluationSetup, settled, traceCalls, type StoredCall } from "./support.js";

const P = "acme/scorecalls";
const NOW = "2026-11-24T05:00:00.000000Z";
const LATER = "2026-11-24T05:00:01.000000Z";

const { service, api, setup, jobCount } = evaluationFile(P, { rows: [{ question: "1+1=" }, { question: "2+2=" }] });

interface Feedback {
  weave_ref: string;
  feedback_type: string;
  payload: Record<string, unknown>;
  runnable_ref: string | null;
  call_ref: string | null;
}

async function logCall(id: string, question: string, output: string): Promise<void> {
  const start = { project_id: P, id, trace_id: `t-${id}`, op_name: "answer", started_at: NOW, attributes: {}, inputs: { question } };
  await api.json("/call/upsert_batch", {
    batch: [{ mode: "start", req: { start } }, { mode: "end", req: { end: { project_id: P, id, ended_at: LATER, output, summary: {} } } }],
  });
}

describe("calls/score", () => {
  it("writes a score call per call and scorer, and feedback wandb.runnable.<scorer> on the scored call", async () => {
    await logCall("scored-1", "1+1=", "2");
    await logCall("scored-2", "2+2=", "4");
    expect(await api.json("/calls/score", { project_id: P, call_ids: ["scored-1", "scored-2"], scorer_refs: [setup.scorer] })).toEqual({});
    const feedback = await until(async () => {
      const { result } = await api.json<{ result: Feedback[] }>("/feedback/query", { project_id: P });
      return result.length === 2 ? result : null;
    }, 60_000);
    for (const id of ["scored-1", "scored-2"]) {
      const item = feedback.find((f) => f.weave_ref === `weave:///${P}/call/${id}`)!;
      expect(item).toMatchObject({ feedback_type: "wandb.runnable.judge", runnable_ref: setup.scorer, call_ref: expect.stringMatching(`^weave:///${P}/call/`) });
      const scoreId = item.call_ref!.split("/").pop()!;
      const [score] = await api.lines<StoredCall>("/calls/stream_query", { project_id: P, filter: { call_ids: [scoreId] } });
      expect(score).toMatchObject({ op_name: "judge.score", parent_id: null, inputs: { self: setup.scorer, question: id === "scored-1" ? "1+1=" : "2+2=", output: id === "scored-1" ? "2" : "4" } });
      expect(item.payload).toEqual({ output: score!.output });
    }
  });

  it("answers 404 for an unknown call id, 404/422 for bad scorer refs, and queues nothing", async () => {
    await logCall("scored-3", "3+3=", "6");
    const before = await jobCount();
    const unknown = await api.post("/calls/score", { project_id: P, call_ids: ["scored-3", "nope"], scorer_refs: [setup.scorer] });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: `call nope not found in project ${P}`, message: `call nope not found in project ${P}` });
    const notAScorer = await api.post("/calls/score", { project_id: P, call_ids: ["scored-3"], scorer_refs: [setup.model] });
    expect(notAScorer.status).toBe(422);
    expect(((await notAScorer.json()) as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(["body", "scorer_refs", 0]);
    const empty = await api.post("/calls/score", { project_id: P, call_ids: [], scorer_refs: [setup.scorer] });
    expect(empty.status).toBe(422);
    expect(await jobCount()).toBe(before);
  });
});

describe("an upstream OpenAI-compatible endpoint (EVAL_LLM_BASE_URL)", () => {
  it("serves the job's LLM calls when it answers", async () => {
    const viaUpstream = await startTestService({ EVAL_LLM_BASE_URL: `${service.url}/v1`, EVAL_LLM_API_KEY: KEY_ACME });
    try {
      const api2 = client(viaUpstream.url);
      const s = await evaluationSetup(api2, P, { rows: [{ question: "1+1=" }] });
      const { call_id } = await api2.json<{ call_id: string }>("/evaluations/evaluate_model", { project_id: P, evaluation_ref: s.evaluation, model_ref: s.model });
      expect((await settled(api2, P, call_id)).code).toBe("complete");
      const calls = await traceCalls(api2, P, call_id);
      const predict = calls.find((c) => c.op_name === "adder.predict")!;
      expect(Object.keys((predict.summary as { usage: object }).usage)).toEqual(["tracehouse/bytelm-small"]);
    } finally {
      await viaUpstream.stop();
    }
  });

  it("fails the evaluation with the endpoint's error when it refuses, and the root call ends with it", async () => {
    const refused = await startTestService({ EVAL_LLM_BASE_URL: `${service.url}/v1`, EVAL_LLM_API_KEY: "not-a-key-of-that-service" });
    try {
      const api2 = client(refused.url);
      const s = await evaluationSetup(api2, P, { rows: [{ question: "1+1=" }] });
      const { call_id } = await api2.json<{ call_id: string }>("/evaluations/evaluate_model", { project_id: P, evaluation_ref: s.evaluation, model_ref: s.model });
      const end = await settled(api2, P, call_id);
      expect(end).toEqual({ code: "failed", error: expect.stringMatching(/^chat completion endpoint answered 401: /) });
      const root = (await traceCalls(api2, P, call_id)).find((c) => c.id === call_id)!;
      expect(root.exception).toBe((end as { error: string }).error);
    } finally {
      await refused.stop();
    }
  });
});
