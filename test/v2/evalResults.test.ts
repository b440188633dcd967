import { beforeAll, describe, expect, it } from "vitest";
import { objectDigest } from "../../services/digests.js";
import { fromPlainJson } from "../../services/losslessJson.js";
import { client, serviceForFile } from "../support/service.js";
import type { StoredCall } from "../weaveSdk/support.js";
import { v2Client } from "./support.js";

/**
 * eval_results over two /v2/ runs: every figure is checked against figures computed here from
 * the raw calls (/calls/stream_query); then intersection, filters, sorting, paging, costs and
 * tokens (calls written by the ingest API, as an SDK writes them), bad input.
 */
const P = "acme/v2-results";
const service = serviceForFile();
let v2: ReturnType<typeof v2Client>;
let runA: string;
let runB: string;

interface Res {
  rows: { row_digest: string; raw_data_row?: unknown; evaluations: { evaluation_call_id: string; trials: Record<string, unknown>[] }[] }[];
  total_rows: number;
  summary?: { row_count: number; evaluations: { evaluation_call_id: string; trial_count: number; scorer_stats: Record<string, unknown>[]; evaluation_ref?: string | null; model_ref?: string | null }[] };
  warnings: string[];
}

const QUESTIONS = Array.from({ length: 6 }, (_, i) => ({ q: `${i} + ${i}`, n: i }));
/** Run A answers questions 0..4, run B 1..5; the scores differ per run and row. */
const PLAN = [
  { questions: QUESTIONS.slice(0, 5), score: (n: number) => ({ exact: n % 2, close: n / 10 }) },
  { questions: QUESTIONS.slice(1, 6), score: (n: number) => ({ exact: 1, close: 1 - n / 10 }) },
];

const query = (body: Record<string, unknown>) => v2.post<Res>("/eval_results/query", body);

beforeAll(async () => {
  v2 = v2Client(service.url, P);
  const dataset = await v2.post<{ digest: string }>("/datasets", { name: "sums", rows: QUESTIONS });
  const exact = await v2.post<{ scorer: string }>("/scorers", { name: "exact", op_source_code: "..." });
  const close = await v2.post<{ scorer: string }>("/scorers", { name: "close", op_source_code: "..." });
  const evaluation = await v2.post<{ evaluation_ref: string }>("/evaluations", { name: "sums-eval", dataset: `weave:///${P}/object/sums:${dataset.digest}`, scorers: [exact.scorer, close.scorer] });
  const runs: string[] = [];
  for (const [i, plan] of PLAN.entries()) {
    const model = await v2.post<{ model_ref: string }>("/models", { name: `adder-${i}`, source_code: "..." });
    const { evaluation_run_id: run } = await v2.post<{ evaluation_run_id: string }>("/evaluation_runs", { evaluation: evaluation.evaluation_ref, model: model.model_ref });
    for (const question of plan.questions) {
      const { prediction_id: id } = await v2.post<{ prediction_id: string }>("/predictions", { model: model.model_ref, inputs: question, output: { sum: 2 * question.n + i }, evaluation_run_id: run });
      const scores = plan.score(question.n);
      await v2.post("/scores", { prediction_id: id, scorer: exact.scorer, value: scores.exact, evaluation_run_id: run });
      await v2.post("/scores", { prediction_id: id, scorer: close.scorer, value: scores.close, evaluation_run_id: run });
      await v2.post(`/predictions/${id}/finish`, {});
    }
    await v2.post(`/evaluation_runs/${run}/finish`, {});
    runs.push(run);
  }
  [runA, runB] = runs as [string, string];
});

/** What eval_results should answer, computed from the raw calls. */
async function expectedFromCalls(rootIds: string[]) {
  const calls = await client(service.url).lines<StoredCall>("/calls/stream_query", { project_id: P, sort_by: [{ field: "started_at", direction: "asc" }] });
  const rows = new Map<string, Map<string, Record<string, unknown>[]>>();
  const stats = new Map<string, { sum: Map<string, number>; n: Map<string, number>; trials: number }>();
  for (const pas of calls.filter((c) => c.op_name === "Evaluation.predict_and_score" && rootIds.includes(c.parent_id!))) {
    const digest = objectDigest(fromPlainJson(pas.inputs.example));
    const output = pas.output as { output: unknown; scores: Record<string, number> };
    const predict = calls.find((c) => c.parent_id === pas.id && c.op_name.endsWith(".predict"))!;
    const scoreCalls = calls.filter((c) => c.parent_id === pas.id && c.op_name.endsWith(".score"));
    const trial = {
      predict_and_score_call_id: pas.id,
      predict_call_id: predict.id,
      model_output: output.output,
      scores: output.scores,
      model_latency_seconds: (Date.parse(predict.ended_at!) - Date.parse(predict.started_at)) / 1000,
      total_tokens: null,
      total_cost: null,
      scorer_call_ids: Object.fromEntries(scoreCalls.map((c) => [c.op_name.replace(".score", ""), c.id])),
    };
    const byEval = rows.get(digest) ?? new Map<string, Record<string, unknown>[]>();
    rows.set(digest, byEval);
    byEval.set(pas.parent_id!, [...(byEval.get(pas.parent_id!) ?? []), trial]);
    const s = stats.get(pas.parent_id!) ?? { sum: new Map(), n: new Map(), trials: 0 };
    stats.set(pas.parent_id!, s);
    s.trials += 1;
    for (const [k, v] of Object.entries(output.scores)) {
      s.sum.set(k, (s.sum.get(k) ?? 0) + v);
      s.n.set(k, (s.n.get(k) ?? 0) + 1);
    }
  }
  const sorted = [...rows].sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    rows: sorted.map(([digest, byEval]) => ({
      row_digest: digest,
      evaluations: rootIds.filter((id) => byEval.has(id)).map((id) => ({ evaluation_call_id: id, trials: byEval.get(id)! })),
    })),
    stats,
  };
}

describe("eval_results over /v2/ runs", () => {
  it("groups the trials of both runs by dataset row, with the figures the raw calls give", async () => {
    const expected = await expectedFromCalls([runA, runB]);
    const res = await query({ evaluation_run_ids: [runA, runB], include_summary: true });
    expect(res.total_rows).toBe(6);
    expect(res.warnings).toEqual([]);
    // Latency is computed from microsecond times; the calls API gives the same to the microsecond.
    expect(res.rows).toEqual(expected.rows.map((r) => ({ ...r, evaluations: r.evaluations.map((e) => ({ ...e, trials: e.trials.map((t) => ({ ...t, model_latency_seconds: expect.closeTo(t.model_latency_seconds as number, 6) })) })) })));
    expect(res.summary!.row_count).toBe(6);
    for (const evaluation of res.summary!.evaluations) {
      const s = expected.stats.get(evaluation.evaluation_call_id)!;
      expect(evaluation.trial_count).toBe(s.trials);
      expect(evaluation.model_ref).toMatch(/\/object\/adder-/);
      expect(evaluation.scorer_stats).toEqual(["exact", "close"].map((k) => ({
        scorer_key: k, path: null, value_type: "continuous", trial_count: s.n.get(k), numeric_count: s.n.get(k),
        numeric_mean: expect.closeTo(s.sum.get(k)! / s.n.get(k)!, 12), pass_true_count: 0, pass_known_count: 0, pass_rate: null,
      })));
    }
  });

  it("require_intersection keeps the rows both runs answered; paging; evaluation_call_ids and run ids are one list", async () => {
    const both = await query({ evaluation_call_ids: [runA], evaluation_run_ids: [runB, runA], require_intersection: true, include_summary: true });
    const digests = QUESTIONS.slice(1, 5).map((q) => objectDigest(fromPlainJson(q))).sort();
    expect(both.rows.map((r) => r.row_digest)).toEqual(digests);
    expect(both.total_rows).toBe(4);
    expect(both.summary!.row_count).toBe(4);
    expect(both.summary!.evaluations.map((e) => e.trial_count)).toEqual([4, 4]);
    const page = await query({ evaluation_run_ids: [runA, runB], require_intersection: true, limit: 2, offset: 1 });
    expect(page.rows.map((r) => r.row_digest)).toEqual(digests.slice(1, 3));
    expect(page.total_rows).toBe(4);
    const none = await query({ evaluation_run_ids: [runA], include_rows: false, include_summary: true });
    expect(none).toMatchObject({ rows: [], total_rows: 0, summary: { row_count: 5 } });
  });

  it("filters rows by their trials' fields and sorts by a score", async () => {
    const digestOf = (n: number) => objectDigest(fromPlainJson(QUESTIONS[n]));
    // Run A's exact is n % 2: rows 1 and 3 pass.
    const exact = await query({ evaluation_run_ids: [runA, runB], filters: [{ evaluation_call_id: runA, query: { $expr: { $eq: [{ $getField: "scores.exact" }, { $literal: 1 }] } } }] });
    expect(exact.rows.map((r) => r.row_digest).sort()).toEqual([digestOf(1), digestOf(3)].sort());
    const either = await query({
      evaluation_run_ids: [runA, runB],
      filters: [
        { evaluation_call_id: runA, query: { $expr: { $eq: [{ $getField: "scores.exact" }, { $literal: 1 }] } } },
        { query: { $expr: { $gte: [{ $getField: "scores.close" }, { $literal: 0.9 }] } } },
      ],
    });
    // close ≥ 0.9: only run B's row 1 (1 - 0.1).
    expect(either.rows.map((r) => r.row_digest).sort()).toEqual([digestOf(1), digestOf(3)].sort());
    const and = await query({
      evaluation_run_ids: [runA, runB], filter_logic_operator: "and",
      filters: [
        { evaluation_call_id: runA, query: { $expr: { $eq: [{ $getField: "scores.exact" }, { $literal: 1 }] } } },
        { query: { $expr: { $gte: [{ $getField: "scores.close" }, { $literal: 0.9 }] } } },
      ],
    });
    expect(and.rows.map((r) => r.row_digest)).toEqual([digestOf(1)]);
    const output = await query({ evaluation_run_ids: [runB], filters: [{ query: { $expr: { $gt: [{ $getField: "model_output.sum" }, { $literal: 8 }] } } }] });
    expect(output.rows.map((r) => r.row_digest).sort()).toEqual([digestOf(4), digestOf(5)].sort());

    // Sorted by run B's close, descending: rows 1..5 in order, then row 0 (run B has no trial there: last).
    const sorted = await query({ evaluation_run_ids: [runA, runB], sort_by: [{ field: "scores.close", direction: "desc", evaluation_call_id: runB }] });
    expect(sorted.rows.map((r) => r.row_digest)).toEqual([1, 2, 3, 4, 5, 0].map(digestOf));
    const byMean = await query({ evaluation_run_ids: [runA, runB], sort_by: [{ field: "scores.close", direction: "asc" }], limit: 1 });
    expect(byMean.rows.map((r) => r.row_digest)).toEqual([digestOf(0)]);
  });

  it("include_raw_data_rows answers each row's example", async () => {
    const res = await query({ evaluation_run_ids: [runA], include_raw_data_rows: true, resolve_row_refs: true, limit: 1 });
    const row = res.rows[0]!;
    expect(QUESTIONS.map((q) => objectDigest(fromPlainJson(q)))).toContain(row.row_digest);
    expect(objectDigest(fromPlainJson(row.raw_data_row))).toBe(row.row_digest);
  });

  it("reads tokens and costs of the model call, as an SDK logs them", async () => {
    const api = client(service.url);
    await api.json("/cost/create", { project_id: P, costs: { "tiny-llm": { prompt_token_cost: 0.5, completion_token_cost: 2 } } });
    // One instant for every time: the model call's latency is exactly its 0.25 s, however slow the machine.
    const now = Date.now();
    const at = (s: number) => new Date(now + s * 1000).toISOString();
    const call = (id: string, parent: string | null, op: string, inputs: Record<string, unknown>, output: unknown, s: number, summary: Record<string, unknown> = {}) => [
      { mode: "start", req: { start: { project_id: P, id, trace_id: "t-sdk", parent_id: parent, op_name: op, started_at: at(s), attributes: {}, inputs } } },
      { mode: "end", req: { end: { project_id: P, id, ended_at: at(s + 0.25), output, summary } } },
    ];
    const example = `weave:///${P}/object/sums:abc/attr/rows/id/row-digest-1`;
    const model = `weave:///${P}/object/llm:xyz`;
    const batch = [
      ...call("root-sdk", null, `weave:///${P}/op/Evaluation.evaluate:d1`, { self: `weave:///${P}/object/e:1`, model }, { ok: 1 }, 0),
      ...call("pas-sdk", "root-sdk", `weave:///${P}/op/Evaluation.predict_and_score:d2`, { self: `weave:///${P}/object/e:1`, model, example }, { output: "hi", scores: { judge: { passed: true, score: 0.8 } } }, 1),
      ...call("llm-sdk", "pas-sdk", `weave:///${P}/op/LLM.predict:d3`, { self: model, prompt: "x" }, "hi", 1.1, { usage: { "tiny-llm": { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, requests: 1 } } }),
      ...call("judge-sdk", "pas-sdk", `weave:///${P}/op/judge:d4`, { output: "hi" }, { passed: true, score: 0.8 }, 1.5),
    ];
    await api.json("/call/upsert_batch", { batch });
    const res = await query({ evaluation_call_ids: ["root-sdk", "missing-root"], include_costs: true, include_summary: true, include_raw_data_rows: true });
    expect(res.warnings).toEqual(["evaluation call missing-root not found"]);
    expect(res.rows).toEqual([{
      row_digest: "row-digest-1",
      raw_data_row: example,
      evaluations: [{
        evaluation_call_id: "root-sdk",
        trials: [{
          predict_and_score_call_id: "pas-sdk", predict_call_id: "llm-sdk", model_output: "hi", scores: { judge: { passed: true, score: 0.8 } },
          model_latency_seconds: 0.25, total_tokens: 15, total_cost: 10 * 0.5 + 5 * 2, scorer_call_ids: { judge: "judge-sdk" },
        }],
      }],
    }]);
    expect(res.summary!.evaluations[0]!.scorer_stats).toEqual([
      { scorer_key: "judge", path: "passed", value_type: "binary", trial_count: 1, numeric_count: 0, numeric_mean: null, pass_true_count: 1, pass_known_count: 1, pass_rate: 1 },
      { scorer_key: "judge", path: "score", value_type: "continuous", trial_count: 1, numeric_count: 1, numeric_mean: 0.8, pass_true_count: 0, pass_known_count: 0, pass_rate: null },
    ]);
  });

  it("refuses unknown fields and bad bodies with 422", async () => {
    for (const body of [
      { evaluation_run_ids: [runA], sort_by: [{ field: "colour" }] },
      { evaluation_run_ids: [runA], filters: [{ query: { $expr: { $eq: [{ $getField: "nope.x" }, { $literal: 1 }] } } }] },
      { evaluation_run_ids: [runA], filters: [{ query: { $bogus: 1 } }] },
      { evaluation_run_ids: "not a list" },
      { evaluation_run_ids: [runA], limit: -1 },
    ]) {
      const res = await v2.send("POST", "/eval_results/query", body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(res.body).toMatchObject({ detail: expect.anything() });
    }
    expect(await query({})).toEqual({ rows: [], total_rows: 0, warnings: [] });
  });
});
