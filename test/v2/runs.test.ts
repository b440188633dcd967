import { beforeAll, describe, expect, it } from "vitest";
import { client, KEY_OTHER, serviceForFile } from "../support/service.js";
import type { StoredCall } from "../weaveSdk/support.js";
import { ISO, v2Client } from "./support.js";

/**
 * The call-backed /v2/ families: a run with predictions and scores, written as calls (read
 * back through /calls/stream_query at once), scores as feedback, finish's means and summarize
 * call, lists, deletes, bad input, 403.
 */
const P = "acme/v2-runs";
const service = serviceForFile();
let v2: ReturnType<typeof v2Client>;
let refs: { model: string; evaluation: string; correct: string; closeness: string };
beforeAll(async () => {
  v2 = v2Client(service.url, P);
  const dataset = await v2.post<{ digest: string }>("/datasets", { name: "arith", rows: [{ q: "2+2" }, { q: "3*3" }] });
  const correct = await v2.post<{ scorer: string }>("/scorers", { name: "correct", op_source_code: "def score(): ..." });
  const closeness = await v2.post<{ scorer: string }>("/scorers", { name: "closeness", op_source_code: "def score(): ..." });
  const evaluation = await v2.post<{ evaluation_ref: string }>("/evaluations", {
    name: "arith-eval", dataset: `weave:///${P}/object/arith:${dataset.digest}`, scorers: [correct.scorer, closeness.scorer],
  });
  const model = await v2.post<{ model_ref: string }>("/models", { name: "calc", source_code: "class Calc: ..." });
  refs = { model: model.model_ref, evaluation: evaluation.evaluation_ref, correct: correct.scorer, closeness: closeness.scorer };
});

const calls = () => client(service.url).lines<StoredCall>("/calls/stream_query", { project_id: P, sort_by: [{ field: "started_at", direction: "asc" }] });

describe("/v2/ evaluation runs, predictions and scores", () => {
  it("writes the calls of an evaluation, readable at once, and finish summarizes the scores", async () => {
    const { evaluation_run_id: runId } = await v2.post<{ evaluation_run_id: string }>("/evaluation_runs", { evaluation: refs.evaluation, model: refs.model });
    expect(await v2.get(`/evaluation_runs/${runId}`)).toEqual({
      evaluation_run_id: runId, evaluation: refs.evaluation, model: refs.model, status: "running", started_at: expect.stringMatching(ISO), finished_at: null, summary: null, source_evaluation_run_id: null,
    });

    const examples = [
      { inputs: { q: "2+2" }, output: "4", scores: { correct: 1, closeness: 1 } },
      { inputs: { q: "3*3" }, output: "6", scores: { correct: 0, closeness: 0.5 } },
    ];
    const predictionIds: string[] = [];
    for (const ex of examples) {
      const { prediction_id: id } = await v2.post<{ prediction_id: string }>("/predictions", { model: refs.model, inputs: ex.inputs, output: ex.output, evaluation_run_id: runId });
      predictionIds.push(id);
      for (const [scorer, value] of Object.entries(ex.scores)) {
        await v2.post("/scores", { prediction_id: id, scorer: scorer === "correct" ? refs.correct : refs.closeness, value, evaluation_run_id: runId });
      }
      expect(await v2.post(`/predictions/${id}/finish`, {})).toEqual({ success: true });
    }
    expect(await v2.get(`/predictions/${predictionIds[0]}`)).toEqual({ prediction_id: predictionIds[0], model: refs.model, inputs: { q: "2+2" }, output: "4", evaluation_run_id: runId, wb_user_id: "alice" });
    expect(await v2.post(`/evaluation_runs/${runId}/finish`, { summary: { note: "done" } })).toEqual({ success: true });

    const summary = { correct: { mean: 0.5 }, closeness: { mean: 0.75 }, note: "done" };
    const run = await v2.get<{ status: string; summary: unknown; finished_at: string }>(`/evaluation_runs/${runId}`);
    expect(run).toMatchObject({ status: "finished", summary, finished_at: expect.stringMatching(ISO) });

    // The calls, as the trace API reads them.
    const stored = await calls();
    const byName = (name: string) => stored.filter((c) => c.op_name === name);
    const [root] = byName("Evaluation.evaluate");
    expect(root).toMatchObject({ id: runId, trace_id: runId, parent_id: null, inputs: { self: refs.evaluation, model: refs.model }, attributes: { weave: { evaluation_run: "true", evaluation: refs.evaluation, model: refs.model } }, output: summary });
    expect(byName("Evaluation.summarize")).toEqual([expect.objectContaining({ parent_id: runId, trace_id: runId, output: summary, inputs: { self: refs.evaluation } })]);
    const pas = byName("Evaluation.predict_and_score");
    expect(pas).toHaveLength(2);
    for (const [i, ex] of examples.entries()) {
      const predict = stored.find((c) => c.id === predictionIds[i])!;
      expect(predict).toMatchObject({ op_name: "calc.predict", parent_id: pas[i]!.id, trace_id: runId, inputs: { self: refs.model, ...ex.inputs }, output: ex.output, attributes: { weave: { prediction: "true", model: refs.model, evaluation_run_id: runId } } });
      expect(predict.ended_at).not.toBeNull();
      expect(pas[i]).toMatchObject({ parent_id: runId, inputs: { self: refs.evaluation, model: refs.model, example: ex.inputs }, output: { output: ex.output, scores: ex.scores, model_latency: expect.any(Number) } });
      const scoreCalls = stored.filter((c) => c.parent_id === pas[i]!.id && c.id !== predict.id);
      expect(scoreCalls.map((c) => c.op_name).sort()).toEqual(["closeness.score", "correct.score"]);
    }
    expect(stored.every((c) => c.ended_at !== null && c.exception === null)).toBe(true);

    // Each score is feedback on its prediction.
    const feedback = (await client(service.url).json<{ result: { weave_ref: string; feedback_type: string; payload: unknown; runnable_ref: string; call_ref: string }[] }>("/feedback/query", { project_id: P })).result;
    expect(feedback).toHaveLength(4);
    expect(feedback.filter((f) => f.weave_ref === `weave:///${P}/call/${predictionIds[1]}` && f.feedback_type === "wandb.runnable.closeness")).toEqual([
      expect.objectContaining({ payload: { output: 0.5 }, runnable_ref: refs.closeness, call_ref: expect.stringMatching(new RegExp(`^weave:///${P}/call/`)) }),
    ]);

    // Lists, with their filters and paging.
    expect((await v2.list<{ evaluation_run_id: string }>(`/evaluation_runs?evaluations=${encodeURIComponent(refs.evaluation)}`)).map((r) => r.evaluation_run_id)).toEqual([runId]);
    expect(await v2.list(`/evaluation_runs?models=${encodeURIComponent(`weave:///${P}/object/other:x`)}`)).toEqual([]);
    expect((await v2.list<{ prediction_id: string }>(`/predictions?evaluation_run_id=${runId}`)).map((p) => p.prediction_id)).toEqual(predictionIds);
    expect((await v2.list<{ prediction_id: string }>(`/predictions?limit=1&offset=1`)).map((p) => p.prediction_id)).toEqual([predictionIds[1]]);
    const scores = await v2.list<{ score_id: string; value: number; scorer: string }>(`/scores?evaluation_run_id=${runId}`);
    expect(scores.map((s) => s.value)).toEqual([1, 1, 0, 0.5]);
    expect(await v2.get(`/scores/${scores[3]!.score_id}`)).toEqual({ score_id: scores[3]!.score_id, scorer: refs.closeness, value: 0.5, evaluation_run_id: runId, wb_user_id: "alice" });

    // Deletes: a score takes its feedback along; a run takes every call under it.
    expect(await v2.del(`/scores?score_ids=${scores[3]!.score_id},unknown`)).toEqual({ num_deleted: 1 });
    expect((await v2.send("GET", `/scores/${scores[3]!.score_id}`)).status).toBe(404);
    expect((await client(service.url).json<{ result: unknown[] }>("/feedback/query", { project_id: P })).result).toHaveLength(3);
    expect(await v2.del(`/evaluation_runs?evaluation_run_ids=${runId}`)).toEqual({ num_deleted: 1 });
    expect(await calls()).toEqual([]);
    expect((await v2.send("GET", `/evaluation_runs/${runId}`)).status).toBe(404);
  });

  it("a prediction outside a run is a call of its own trace; deleting it takes its scores", async () => {
    const { prediction_id: id } = await v2.post<{ prediction_id: string }>("/predictions", { model: refs.model, inputs: { q: "1+1" }, output: 2 });
    const { score_id: scoreId } = await v2.post<{ score_id: string }>("/scores", { prediction_id: id, scorer: refs.correct, value: 1 });
    expect(await v2.get(`/predictions/${id}`)).toMatchObject({ prediction_id: id, evaluation_run_id: null });
    expect(await v2.post(`/predictions/${id}/finish`, {})).toEqual({ success: true });
    const stored = await calls();
    expect(stored.find((c) => c.id === id)).toMatchObject({ parent_id: null, op_name: "calc.predict" });
    expect(stored.find((c) => c.id === scoreId)).toMatchObject({ parent_id: null, op_name: "correct.score", output: 1 });
    expect(await v2.del(`/predictions?prediction_ids=${id}`)).toEqual({ num_deleted: 1 });
    expect(await calls()).toEqual([]);
  });

  it("refuses bad input and unknown ids, writing nothing; 403 for another entity's key", async () => {
    const cases = [
      ["POST", "/evaluation_runs", { evaluation: refs.evaluation }, 422],
      ["POST", "/evaluation_runs", { evaluation: refs.evaluation, model: `weave:///${P}/object/nope:x` }, 404],
      ["POST", "/predictions", { model: refs.model, inputs: [1], output: 1 }, 422],
      ["POST", "/predictions", { model: refs.model, inputs: {}, output: 1, evaluation_run_id: "no-such-run" }, 404],
      ["POST", "/scores", { prediction_id: "nope", scorer: refs.correct, value: 1 }, 404],
      ["POST", "/scores", { prediction_id: "nope", scorer: refs.correct, value: "high" }, 422],
      ["POST", "/evaluation_runs/no-such-run/finish", {}, 404],
      ["POST", "/predictions/no-such/finish", undefined, 404],
      ["GET", "/predictions/no-such", undefined, 404],
      ["DELETE", "/scores", undefined, 422],
    ] as const;
    for (const [method, path, body, status] of cases) {
      const res = await v2.send(method, path, body);
      expect({ method, path, status: res.status }).toEqual({ method, path, status });
      expect(res.body).toMatchObject({ detail: expect.anything() });
    }
    const other = v2Client(service.url, P, KEY_OTHER);
    expect((await other.send("POST", "/evaluation_runs", { evaluation: refs.evaluation, model: refs.model })).status).toBe(403);
    expect(await calls()).toEqual([]);
  });
});
