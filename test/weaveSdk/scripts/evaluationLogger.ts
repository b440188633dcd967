import * as weave from "weave";

/** The SDK's EvaluationLogger: predictions logged as they happen, each scored, then the summary. */
const QUESTIONS = [
  { question: "2 + 2", expected: "4", answer: "4" },
  { question: "3 * 3", expected: "9", answer: "6" },
];

const client = await weave.init(process.env.WEAVE_PROJECT!);
const ev = new weave.EvaluationLogger({ name: "arithmetic-eval", model: { name: "calculator-v1" }, dataset: "arithmetic" });
for (const { question, expected, answer } of QUESTIONS) {
  const pred = ev.logPrediction({ question, expected }, { answer });
  await pred.logScore("correct", answer === expected);
  await pred.logScore("closeness", 1 - Math.abs(Number(answer) - Number(expected)) / 10);
  await pred.finish();
}
await ev.logSummary();
await client.waitForBatchProcessing();
console.log(JSON.stringify({ done: true }));
