import { describe, expect, it } from "vitest";
import { parseRef } from "../../services/refs.js";
import { client, serviceForFile } from "../support/service.js";
import { runSdk } from "./runSdk.js";
import { byOpName, sdkProject, type StoredCall } from "./support.js";

/** The unmodified SDK's Evaluation (scripts/evaluation.ts): a model op and two scorers over a Dataset, read back through the HTTP API. */
const P = "acme/sdk-eval";
const service = serviceForFile();

/** What the model answers and the scorers say for each country (the model gets Japan wrong). */
const EXPECTED: Record<string, { answer: string; correct: boolean }> = {
  France: { answer: "Paris", correct: true },
  Japan: { answer: "Kyoto", correct: false },
  Peru: { answer: "Lima", correct: true },
};
const SUMMARY = {
  model_success: { true_count: 3, true_fraction: 1 },
  exactMatch: { correct: { true_count: 2, true_fraction: 2 / 3 } },
  answerLength: { mean: 14 / 3 },
};

describe("the Weave TypeScript SDK: an Evaluation with a model and scorers", () => {
  it("stores evaluate → predictAndScore → model and scorer calls, each prediction and score, and the evaluation's summary", async () => {
    const run = await runSdk<{ summary: Record<string, unknown> }>("evaluation", service.url, P);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    const { model_latency: latency, ...summary } = run.result.summary;
    expect(summary).toEqual(SUMMARY);
    expect(latency).toEqual({ mean: expect.any(Number) });

    const p = sdkProject(client(service.url), P);
    const calls = await p.calls();
    expect(calls).toHaveLength(13);
    const [evaluate] = byOpName(calls, "Evaluation.evaluate");
    expect(evaluate).toMatchObject({ parent_id: null, display_name: "capital-eval_predictCapital", exception: null, output: run.result.summary });
    expect(calls.every((c) => c.trace_id === evaluate!.trace_id && c.exception === null)).toBe(true);

    // The evaluation object, its dataset and scorers, all by refs that resolve.
    const evaluation = await p.readRef(evaluate!.inputs.self as string);
    expect(evaluation).toMatchObject({ object_id: "capital-eval", base_object_class: "Evaluation" });
    const evalVal = evaluation.val as { dataset: string; scorers: string[] };
    expect(evalVal).toMatchObject({ _type: "Evaluation", _class_name: "Evaluation", name: "capital-eval" });
    const [exactMatch] = byOpName(calls, "exactMatch");
    const [answerLength] = byOpName(calls, "answerLength");
    expect(evalVal.scorers).toEqual([exactMatch!.op_name, answerLength!.op_name]);
    for (const scorer of evalVal.scorers) expect((await p.readRef(scorer)).kind).toBe("op");
    const dataset = await p.readRef(evalVal.dataset);
    const rowsTable = parseRef((dataset.val as { rows: string }).rows);
    if (rowsTable.kind !== "table") throw new Error("a Dataset's rows are a table ref");
    const countryOfRow = new Map((await p.tableRows(rowsTable.digest)).map((r) => [r.digest, (r.val as { country: string }).country]));
    expect([...countryOfRow.values()]).toEqual(["France", "Japan", "Peru"]);

    const [predictCapital] = byOpName(calls, "predictCapital");
    expect(evaluate!.inputs).toEqual({ self: `weave:///${P}/object/capital-eval:${evaluation.digest}`, model: predictCapital!.op_name, maxConcurrency: 1 });
    expect((await p.readRef(predictCapital!.op_name)).kind).toBe("op");

    // One predictAndScore per dataset row, naming the row by ref; under it the model's call and each scorer's.
    const rows = byOpName(calls, "Evaluation.predictAndScore");
    expect(rows).toHaveLength(3);
    const childrenOf = (parent: StoredCall) => calls.filter((c) => c.parent_id === parent.id);
    const seen: string[] = [];
    for (const row of rows) {
      expect(row.parent_id).toBe(evaluate!.id);
      const example = row.inputs.example as string;
      expect(example.startsWith(`${evalVal.dataset}/attr/rows/id/`)).toBe(true);
      const country = countryOfRow.get(example.split("/id/")[1]!)!;
      const { answer, correct } = EXPECTED[country]!;
      seen.push(country);
      expect(row.output).toEqual({ model_success: true, model_output: { answer }, scores: { exactMatch: { correct }, answerLength: answer.length }, model_latency: expect.any(Number) });
      const children = childrenOf(row);
      expect(children).toHaveLength(3);
      const child = (op: StoredCall) => children.find((c) => c.op_name === op.op_name);
      expect(child(predictCapital!)).toMatchObject({ inputs: { arg0: { datasetRow: example } }, output: { answer } });
      expect(child(exactMatch!)).toMatchObject({ inputs: { arg0: { datasetRow: example, modelOutput: { answer } } }, output: { correct } });
      expect(child(answerLength!)).toMatchObject({ inputs: { arg0: { datasetRow: example, modelOutput: { answer } } }, output: answer.length });
    }
    expect(seen.sort()).toEqual(["France", "Japan", "Peru"]);

    // expand_columns: the predictAndScore calls filtered and sorted by a field of the dataset row `inputs.example` names.
    const rowOf = new Map((await p.tableRows(rowsTable.digest)).map((r) => [r.digest, r.val as { country: string; capital: string }]));
    const expanded = (body: Record<string, unknown>) =>
      client(service.url).lines<StoredCall>("/calls/stream_query", { project_id: P, filter: { op_names: [rows[0]!.op_name] }, expand_columns: ["inputs.example"], ...body });
    const country = (value: string) => ({ $expr: { $eq: [{ $getField: "inputs.example.country" }, { $literal: value }] } });
    const japanRow = rows.find((r) => countryOfRow.get((r.inputs.example as string).split("/id/")[1]!) === "Japan")!;
    const [japan, ...others] = await expanded({ query: country("Japan") });
    expect(others).toEqual([]);
    expect(japan!.id).toBe(japanRow.id);
    const japanRef = japanRow.inputs.example as string;
    expect(japan!.inputs.example).toEqual({ ...rowOf.get(japanRef.split("/id/")[1]!), _ref: japanRef });
    const [kept] = await expanded({ query: country("Japan"), return_expanded_column_values: false });
    expect(kept!.inputs.example).toBe(japanRef);
    const sorted = await expanded({ sort_by: [{ field: "inputs.example.capital", direction: "desc" }] });
    expect(sorted.map((c) => (c.inputs.example as { capital: string }).capital)).toEqual(["Tokyo", "Paris", "Lima"]);
    // The model's calls name the row at inputs.arg0.datasetRow: the wrong answer is found by the row's capital.
    const wrong = await client(service.url).lines<StoredCall>("/calls/stream_query", {
      project_id: P,
      filter: { op_names: [predictCapital!.op_name] },
      expand_columns: ["inputs.arg0.datasetRow"],
      return_expanded_column_values: false,
      query: { $expr: { $not: [{ $eq: [{ $getField: "inputs.arg0.datasetRow.capital" }, { $getField: "output.answer" }] }] } },
    });
    expect(wrong.map((c) => c.output)).toEqual([{ answer: "Kyoto" }]);
  });
});
