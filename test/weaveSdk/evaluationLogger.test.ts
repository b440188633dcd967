import { describe, expect, it } from "vitest";
import { client, serviceForFile } from "../support/service.js";
import { runSdk } from "./runSdk.js";
import { byOpName, sdkProject, type StoredCall } from "./support.js";

/** The unmodified SDK's EvaluationLogger (scripts/evaluationLogger.ts): predictions and scores logged as they happen, read back through the HTTP API. */
const P = "acme/sdk-evlog";
const service = serviceForFile();

interface Feedback {
  weave_ref: string;
  feedback_type: string;
  payload: unknown;
  runnable_ref: string;
  call_ref: string;
  wb_user_id: string;
}

const PREDICTIONS = [
  { example: { question: "2 + 2", expected: "4" }, output: { answer: "4" }, scores: { correct: true, closeness: 1 } },
  { example: { question: "3 * 3", expected: "9" }, output: { answer: "6" }, scores: { correct: false, closeness: 0.7 } },
];
const SUMMARY = { correct: { true_count: 1, true_fraction: 0.5 }, closeness: { mean: 0.85 } };

describe("the Weave TypeScript SDK: EvaluationLogger", () => {
  it("stores the evaluation's calls, each prediction and score, scores as feedback on the predictions, and the summary", async () => {
    const run = await runSdk<{ done: boolean }>("evaluationLogger", service.url, P);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    const api = client(service.url);
    const p = sdkProject(api, P);
    const calls = await p.calls();
    expect(calls).toHaveLength(10);
    const [evaluate] = byOpName(calls, "Evaluation.evaluate");
    const [summarize] = byOpName(calls, "Evaluation.summarize");
    expect(evaluate).toMatchObject({ parent_id: null, output: SUMMARY, attributes: { _weave_eval_meta: { imperative: true } } });
    expect(summarize).toMatchObject({ parent_id: evaluate!.id, output: SUMMARY });
    expect(calls.every((c) => c.trace_id === evaluate!.trace_id && c.exception === null && c.ended_at !== null)).toBe(true);

    const evaluation = await p.readRef(evaluate!.inputs.self as string);
    expect(evaluation).toMatchObject({ object_id: "arithmetic-eval", base_object_class: "Evaluation", val: { _type: "Evaluation", name: "arithmetic-eval", dataset: "arithmetic" } });
    const model = await p.readRef(evaluate!.inputs.model as string);
    expect(model).toMatchObject({ object_id: "calculator-v1", kind: "object" });

    const feedback = (await api.json<{ result: Feedback[] }>("/feedback/query", { project_id: P })).result;
    expect(feedback).toHaveLength(4);
    const childrenOf = (parent: StoredCall) => calls.filter((c) => c.parent_id === parent.id);
    const predictAndScore = byOpName(calls, "Evaluation.predict_and_score");
    expect(predictAndScore).toHaveLength(2);
    for (const [i, { example, output, scores }] of PREDICTIONS.entries()) {
      const row = predictAndScore[i]!;
      expect(row).toMatchObject({ parent_id: evaluate!.id, inputs: { self: evaluate!.inputs.self, model: evaluate!.inputs.model, example }, output: { output, scores } });
      const children = childrenOf(row);
      const [predict] = byOpName(children, "Model.predict");
      expect(predict).toMatchObject({ inputs: { arg0: example }, output });
      for (const [scorer, score] of Object.entries(scores)) {
        const [scoreCall] = byOpName(children, `${scorer}.score`);
        expect(scoreCall).toMatchObject({ display_name: `${scorer}.score`, output: score, attributes: { _weave_eval_meta: { imperative: true, score: true } } });
        const scorerRef = scoreCall!.inputs.self as string;
        expect((await p.readRef(scorerRef)).object_id).toBe(scorer);
        // The score is feedback on the prediction's call, pointing at the scorer and its call.
        expect(feedback.filter((f) => f.weave_ref === `weave:///${P}/call/${predict!.id}` && f.feedback_type === `wandb.runnable.${scorer}`)).toEqual([
          expect.objectContaining({ payload: { output: score }, runnable_ref: scorerRef, call_ref: `weave:///${P}/call/${scoreCall!.id}`, wb_user_id: "alice" }),
        ]);
      }
      expect(children).toHaveLength(3);
    }
  });
});
