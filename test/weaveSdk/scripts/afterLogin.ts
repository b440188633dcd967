import * as weave from "weave";

/** A later session with no WANDB_API_KEY: weave.init takes the key weave.login saved, and an op is traced with it. */
const greet = weave.op(async (name: string) => `hello ${name}`, { name: "greet" });
const client = await weave.init(process.env.WEAVE_PROJECT!);
const greeting = await greet("netrc");
await client.waitForBatchProcessing();
console.log(JSON.stringify({ greeting }));
