import * as weave from "weave";

/** A parent op calling two children, one of which throws; then an op throwing straight into this code. */
class Refusal extends Error {}

const double = weave.op(async (x: number) => ({ doubled: x * 2 }), {
  name: "double",
  summarize: () => ({ usage: { "gpt-4o-mini": { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } } }),
});
const refuse = weave.op(
  async (x: number): Promise<number> => {
    throw new Refusal(`refused ${x}`);
  },
  { name: "refuse" },
);
const pipeline = weave.op(
  async (x: number) => {
    const { doubled } = await double(x);
    try {
      return { doubled, refused: await refuse(doubled) };
    } catch (e) {
      return { doubled, caught: e instanceof Refusal ? e.message : `not the user's error: ${String(e)}` };
    }
  },
  { name: "pipeline" },
);

const client = await weave.init(process.env.WEAVE_PROJECT!);
const output = await pipeline(21);
let thrown: string;
try {
  await refuse(7);
  thrown = "nothing thrown";
} catch (e) {
  thrown = e instanceof Refusal ? `Refusal: ${e.message}` : `not the user's error: ${String(e)}`;
}
await client.waitForBatchProcessing();
console.log(JSON.stringify({ output, thrown }));
