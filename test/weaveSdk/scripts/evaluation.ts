import * as weave from "weave";

/** The SDK's Evaluation: a model op and two scorers over a three-row Dataset. */
interface Row extends Record<string, unknown> {
  country: string;
  capital: string;
}
const KNOWN: Record<string, string> = { France: "Paris", Japan: "Kyoto", Peru: "Lima" };

const predictCapital = weave.op(async ({ datasetRow }: { datasetRow: Row }) => ({ answer: KNOWN[datasetRow.country] ?? "unknown" }), { name: "predictCapital" });
const exactMatch = weave.op(async ({ datasetRow, modelOutput }: { datasetRow: Row; modelOutput: { answer: string } }) => ({ correct: modelOutput.answer === datasetRow.capital }), {
  name: "exactMatch",
});
const answerLength = weave.op(async ({ modelOutput }: { datasetRow: Row; modelOutput: { answer: string } }) => modelOutput.answer.length, { name: "answerLength" });

const client = await weave.init(process.env.WEAVE_PROJECT!);
const dataset = new weave.Dataset<Row>({
  name: "capitals",
  rows: [
    { country: "France", capital: "Paris" },
    { country: "Japan", capital: "Tokyo" },
    { country: "Peru", capital: "Lima" },
  ],
});
const evaluation = new weave.Evaluation({ name: "capital-eval", dataset, scorers: [exactMatch, answerLength] });
const summary = await evaluation.evaluate({ model: predictCapital, maxConcurrency: 1 });
await client.waitForBatchProcessing();
console.log(JSON.stringify({ summary }));
