import * as weave from "weave";

/** An arbitrary value published, and a Dataset saved; both read back through their refs. */
const client = await weave.init(process.env.WEAVE_PROJECT!);

const settings = { model: "gpt-4o-mini", temperature: 0.25, stop: ["\n\n", "END"], nested: { deep: [1, 2.5, { none: null, yes: true }] }, unicode: "café ☕" };
const settingsRef = await client.publish(settings, "settings");
const settingsBack: unknown = await weave.ObjectRef.fromUri(settingsRef.uri()).get();

const capitals = [
  { country: "France", capital: "Paris", population_m: 2.1 },
  { country: "Japan", capital: "Tokyo", population_m: 14 },
  { country: "Peru", capital: "Lima", population_m: 10.1, tags: ["andes", "pacific"] },
];
const dataset = new weave.Dataset({ name: "capitals", description: "Three capitals", rows: capitals });
const datasetRef = await dataset.save();
const datasetBack = (await weave.ObjectRef.fromUri(datasetRef.uri()).get()) as weave.Dataset<Record<string, unknown>>;
const rowsBack: unknown[] = [];
const rowRefs: string[] = [];
for (let i = 0; i < datasetBack.length; i++) {
  const { __savedRef, ...row } = datasetBack.getRow(i);
  rowsBack.push(row);
  rowRefs.push((await (__savedRef as Promise<{ uri(): string }>)).uri());
}

await client.waitForBatchProcessing();
console.log(
  JSON.stringify({
    settingsRef: settingsRef.uri(),
    settingsBack,
    datasetRef: datasetRef.uri(),
    datasetBack: { name: datasetBack.name, description: datasetBack.description, length: datasetBack.length },
    rowsBack,
    rowRefs,
  }),
);
