import { describe, expect, it } from "vitest";
import { objectDigest } from "../../services/digests.js";
import { fromPlainJson } from "../../services/losslessJson.js";
import { client, serviceForFile } from "../support/service.js";
import { runSdk } from "../weaveSdk/runSdk.js";
import { byOpName, sdkProject } from "../weaveSdk/support.js";
import { v2Client } from "./support.js";

/**
 * eval_results reads what the unmodified Weave TS SDK (0.11.1, in a child process) logs: its
 * `Evaluation` (test/weaveSdk/scripts/evaluation.ts) and its `EvaluationLogger`
 * (test/weaveSdk/scripts/evaluationLogger.ts), not only evaluations made through /v2/.
 */
const service = serviceForFile();

interface Res {
  rows: { row_digest: string; raw_data_row?: unknown; evaluations: { evaluation_call_id: string; trials: Record<string, unknown>[] }[] }[];
  total_rows: number;
  summary: { row_count: number; evaluations: { trial_count: number; scorer_stats: Record<string, unknown>[]; evaluation_ref: string | null }[] };
  warnings: string[];
}

describe("eval_results over evaluations the Weave TS SDK logged", () => {
  it("reads an SDK Evaluation: rows by dataset row ref, model output, scores, scorer calls, resolved rows", async () => {
    const P = "acme/v2-sdk-eval";
    const run = await runSdk("evaluation", service.url, P);
    expect(run.code, run.stderr).toBe(0);
    const calls = await sdkProject(client(service.url), P).calls();
    const [evaluate] = byOpName(calls, "Evaluation.evaluate");
    const [predict] = byOpName(calls, "predictCapital");
    const [exactMatch] = byOpName(calls, "exactMatch");
    const res = await v2Client(service.url, P).post<Res>("/eval_results/query", { evaluation_call_ids: [evaluate!.id], include_summary: true, include_raw_data_rows: true, resolve_row_refs: true });
    expect(res.total_rows).toBe(3);
    expect(res.warnings).toEqual([]);
    const rowsByCountry = new Map(res.rows.map((r) => [(r.raw_data_row as { country: string }).country, r]));
    expect([...rowsByCountry.keys()].sort()).toEqual(["France", "Japan", "Peru"]);
    const answers: Record<string, { answer: string; correct: boolean }> = { France: { answer: "Paris", correct: true }, Japan: { answer: "Kyoto", correct: false }, Peru: { answer: "Lima", correct: true } };
    for (const [country, row] of rowsByCountry) {
      const pas = byOpName(calls, "Evaluation.predictAndScore").find((c) => (c.inputs.example as string).endsWith(`/id/${row.row_digest}`))!;
      const children = calls.filter((c) => c.parent_id === pas.id);
      const { answer, correct } = answers[country]!;
      expect(row.evaluations).toEqual([{
        evaluation_call_id: evaluate!.id,
        trials: [{
          predict_and_score_call_id: pas.id,
          predict_call_id: children.find((c) => c.op_name === predict!.op_name)!.id,
          model_output: { answer },
          scores: { exactMatch: { correct }, answerLength: answer.length },
          model_latency_seconds: expect.any(Number),
          total_tokens: null,
          total_cost: null,
          scorer_call_ids: {
            exactMatch: children.find((c) => c.op_name === exactMatch!.op_name)!.id,
            answerLength: children.find((c) => c.op_name.includes("/answerLength:"))!.id,
          },
        }],
      }]);
    }
    const [summary] = res.summary.evaluations;
    expect(summary).toMatchObject({ trial_count: 3, evaluation_ref: evaluate!.inputs.self });
    expect(summary!.scorer_stats).toEqual([
      { scorer_key: "exactMatch", path: "correct", value_type: "binary", trial_count: 3, numeric_count: 0, numeric_mean: null, pass_true_count: 2, pass_known_count: 3, pass_rate: 2 / 3 },
      { scorer_key: "answerLength", path: null, value_type: "continuous", trial_count: 3, numeric_count: 3, numeric_mean: expect.closeTo(14 / 3, 12), pass_true_count: 0, pass_known_count: 0, pass_rate: null },
    ]);
  });

  it("reads an SDK EvaluationLogger: inline examples digested, the Model.predict call, each logged score", async () => {
    const P = "acme/v2-sdk-evlog";
    const run = await runSdk("evaluationLogger", service.url, P);
    expect(run.code, run.stderr).toBe(0);
    const calls = await sdkProject(client(service.url), P).calls();
    const [evaluate] = byOpName(calls, "Evaluation.evaluate");
    const res = await v2Client(service.url, P).post<Res>("/eval_results/query", { evaluation_call_ids: [evaluate!.id], include_summary: true });
    const examples = [
      { example: { question: "2 + 2", expected: "4" }, output: { answer: "4" }, scores: { correct: true, closeness: 1 } },
      { example: { question: "3 * 3", expected: "9" }, output: { answer: "6" }, scores: { correct: false, closeness: 0.7 } },
    ];
    const expectedRows = examples.map(({ example, output, scores }) => {
      const pas = byOpName(calls, "Evaluation.predict_and_score").find((c) => JSON.stringify(c.inputs.example) === JSON.stringify(example))!;
      const children = calls.filter((c) => c.parent_id === pas.id);
      const [predict] = byOpName(children, "Model.predict");
      return {
        row_digest: objectDigest(fromPlainJson(example)),
        evaluations: [{
          evaluation_call_id: evaluate!.id,
          trials: [{
            predict_and_score_call_id: pas.id, predict_call_id: predict!.id, model_output: output, scores,
            model_latency_seconds: expect.any(Number), total_tokens: null, total_cost: null,
            scorer_call_ids: { correct: byOpName(children, "correct.score")[0]!.id, closeness: byOpName(children, "closeness.score")[0]!.id },
          }],
        }],
      };
    });
    expect(res.rows).toEqual(expectedRows.sort((a, b) => (a.row_digest < b.row_digest ? -1 : 1)));
    expect(res.summary.evaluations[0]!.scorer_stats).toEqual([
      { scorer_key: "correct", path: null, value_type: "binary", trial_count: 2, numeric_count: 0, numeric_mean: null, pass_true_count: 1, pass_known_count: 2, pass_rate: 0.5 },
      { scorer_key: "closeness", path: null, value_type: "continuous", trial_count: 2, numeric_count: 2, numeric_mean: expect.closeTo(0.85, 12), pass_true_count: 0, pass_known_count: 0, pass_rate: null },
    ]);
  });
});
