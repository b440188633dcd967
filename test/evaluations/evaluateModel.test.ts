import { describe, expect, it } from "vitest";
import { autoSummary } from "../../services/worker/jobs/evaluationJobs.js";
import { evaluationFile, evaluationSetup, isoMicros, settled, statusOf, traceCalls, type StoredCall } from "./support.js";

const P = "acme/evaljobs";

const { api, setup, jobCount } = evaluationFile(P);
const seconds = (call: StoredCall) => (isoMicros(call.ended_at!) - isoMicros(call.started_at)) / 1e6;

describe("evaluate_model with the built-in model", () => {
  let callId: string;
  let calls: StoredCall[];

  it("answers a call id, reports running then complete with the summary", async () => {
    const res = await api.json<{ call_id: string }>("/evaluations/evaluate_model", { project_id: P, evaluation_ref: setup.evaluation, model_ref: setup.model });
    callId = res.call_id;
    // The runner claims a job a settle (1 s) after it is recorded: nothing is finished yet.
    expect(await statusOf(api, P, callId)).toEqual({ code: "running", completed_rows: 0, total_rows: 4 });
    const end = await settled(api, P, callId);
    calls = await traceCalls(api, P, callId);
    const root = calls.find((c) => c.id === callId)!;
    expect(end).toEqual({ code: "complete", output: root.output });
    expect(root).toMatchObject({ op_name: "Evaluation.evaluate", parent_id: null, exception: null, inputs: { self: setup.evaluation, model: setup.model } });
  });

  it("writes the calls a Weave client writes: a predict_and_score per row with the model and the judge under it, then summarize", async () => {
    const children = calls.filter((c) => c.parent_id === callId);
    const trials = children.filter((c) => c.op_name === "Evaluation.predict_and_score");
    expect(trials).toHaveLength(4);
    expect(children.filter((c) => c.op_name === "Evaluation.summarize")).toHaveLength(1);
    expect(new Set(trials.map((t) => t.inputs.example)).size).toBe(4);
    for (const pas of trials) {
      expect(String(pas.inputs.example)).toMatch(new RegExp(`^${setup.datasetRef.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/attr/rows/id/`));
      const predict = calls.find((c) => c.parent_id === pas.id && c.op_name === "adder.predict")!;
      const judge = calls.find((c) => c.parent_id === pas.id && c.op_name === "judge.score")!;
      expect(typeof predict.output).toBe("string");
      expect(predict.inputs).toMatchObject({ self: setup.model, question: expect.any(String) });
      expect(judge.inputs).toMatchObject({ self: setup.scorer, output: predict.output });
      expect(pas.output).toEqual({ output: predict.output, scores: { judge: judge.output }, model_latency: expect.closeTo(seconds(predict), 5) });
      // The judge's answer is JSON when it parses, else {"output": text}.
      expect(judge.output === null || typeof judge.output !== "string").toBe(true);
      const usage = (predict.summary as { usage: Record<string, { total_tokens: number }> }).usage;
      expect(usage["tracehouse/bytelm-small"]!.total_tokens).toBeGreaterThan(0);
    }
    const root = calls.find((c) => c.id === callId)!;
    const outputs = trials.map((t) => t.output as { scores: { judge: unknown }; model_latency: number });
    const expected: Record<string, unknown> = {};
    const judge = autoSummary(outputs.map((o) => o.scores.judge as never));
    if (judge !== null) expected.judge = judge;
    expected.model_latency = { mean: outputs.reduce((a, o) => a + o.model_latency, 0) / outputs.length };
    expect(root.output).toEqual(expected);
  });

  it("is read by eval_results/query with the figures of the raw calls", async () => {
    const res = await api.json<{ rows: { row_digest: string; evaluations: { evaluation_call_id: string; trials: Record<string, unknown>[] }[] }[]; summary: { evaluations: { trial_count: number }[] } }>(
      `/v2/${P}/eval_results/query`,
      { evaluation_call_ids: [callId], include_summary: true },
    );
    expect(res.rows).toHaveLength(4);
    expect(res.summary.evaluations[0]!.trial_count).toBe(4);
    for (const row of res.rows) {
      const [trial] = row.evaluations[0]!.trials;
      const pas = calls.find((c) => c.id === trial!.predict_and_score_call_id)!;
      const predict = calls.find((c) => c.parent_id === pas.id && c.op_name === "adder.predict")!;
      const judge = calls.find((c) => c.parent_id === pas.id && c.op_name === "judge.score")!;
      const usage = (predict.summary as { usage: Record<string, { total_tokens: number }> }).usage;
      expect(String(pas.inputs.example).endsWith(`/attr/rows/id/${row.row_digest}`)).toBe(true);
      expect(trial).toMatchObject({
        predict_call_id: predict.id,
        model_output: predict.output,
        scores: { judge: judge.output },
        total_tokens: usage["tracehouse/bytelm-small"]!.total_tokens,
        scorer_call_ids: { judge: judge.id },
      });
      expect(trial!.model_latency_seconds).toBeCloseTo(seconds(predict), 5);
    }
  });
});

describe("evaluate_model with trials", () => {
  it("runs each row once per trial; eval_results groups the trials under their row", async () => {
    const project = "acme/evaljobs-trials";
    const s = await evaluationSetup(api, project, { rows: [{ question: "2+2=" }], trials: 2 });
    const { call_id } = await api.json<{ call_id: string }>("/evaluations/evaluate_model", { project_id: project, evaluation_ref: s.evaluation, model_ref: s.model });
    expect(await statusOf(api, project, call_id)).toEqual({ code: "running", completed_rows: 0, total_rows: 2 });
    expect((await settled(api, project, call_id)).code).toBe("complete");
    const trials = (await traceCalls(api, project, call_id)).filter((c) => c.op_name === "Evaluation.predict_and_score");
    expect(trials).toHaveLength(2);
    expect(trials[0]!.inputs.example).toBe(trials[1]!.inputs.example);
    const res = await api.json<{ rows: { evaluations: { trials: { predict_and_score_call_id: string }[] }[] }[] }>(`/v2/${project}/eval_results/query`, { evaluation_call_ids: [call_id] });
    expect(res.rows).toHaveLength(1);
    expect(res.rows[0]!.evaluations[0]!.trials.map((t) => t.predict_and_score_call_id).sort()).toEqual(trials.map((t) => t.id).sort());
  });
});

describe("evaluation status", () => {
  it("answers not_found for an id that is no evaluation of the project", async () => {
    expect(await statusOf(api, P, "0192f000-0000-7000-8000-000000000000")).toEqual({ code: "not_found" });
  });

  it("answers failed with the error when the model does not exist, and the root call ends with it", async () => {
    const project = "acme/evaljobs-missing-model";
    const s = await evaluationSetup(api, project, { modelId: "no-such-model", rows: [{ question: "1+1=" }] });
    const { call_id } = await api.json<{ call_id: string }>("/evaluations/evaluate_model", { project_id: project, evaluation_ref: s.evaluation, model_ref: s.model });
    const end = await settled(api, project, call_id);
    expect(end).toEqual({ code: "failed", error: "The model `no-such-model` does not exist or you do not have access to it." });
    const [root] = (await traceCalls(api, project, call_id)).filter((c) => c.id === call_id);
    expect(root!.exception).toBe("The model `no-such-model` does not exist or you do not have access to it.");
  });

  it("is not found from another project", async () => {
    const { call_id } = await api.json<{ call_id: string }>("/evaluations/evaluate_model", { project_id: P, evaluation_ref: setup.evaluation, model_ref: setup.model });
    expect(await statusOf(api, "acme/elsewhere", call_id)).toEqual({ code: "not_found" });
    await settled(api, P, call_id);
  });
});

describe("evaluate_model refuses bad refs and queues nothing", () => {
  const post = (body: Record<string, unknown>) => api.post("/evaluations/evaluate_model", { project_id: P, evaluation_ref: setup.evaluation, model_ref: setup.model, ...body });

  it("404 for a ref that names nothing, 422 for another project's ref or another class", async () => {
    const before = await jobCount();
    const missing = await post({ evaluation_ref: setup.evaluation.replace(/:[^:]+$/, ":0000000000000000000000000000000000000000000") });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: expect.stringContaining("names no object"), message: expect.any(String) });

    const wrongClass = await post({ model_ref: setup.evaluation });
    expect(wrongClass.status).toBe(422);
    const body = (await wrongClass.json()) as { detail: { loc: string[]; msg: string }[] };
    expect(body.detail[0]).toMatchObject({ loc: ["body", "model_ref"], msg: expect.stringContaining("a Evaluation, not a LLMStructuredCompletionModel") });

    const otherProject = await post({ evaluation_ref: setup.evaluation.replace(P, "acme/other") });
    expect(otherProject.status).toBe(422);
    expect(((await otherProject.json()) as { detail: { loc: string[] }[] }).detail[0]!.loc).toEqual(["body", "evaluation_ref"]);

    const notARef = await post({ evaluation_ref: "sums-eval" });
    expect(notARef.status).toBe(422);
    expect(await jobCount()).toBe(before);
  });
});
