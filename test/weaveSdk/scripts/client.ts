import * as weave from "weave";

/** The SDK's other client paths: renaming a finished call, attributes, a streamed op, a prompt, and reading calls back. */
const greet = weave.op(async (name: string) => `hello ${name}`, { name: "greet" });
const count = weave.op(
  async function* (upTo: number) {
    for (let i = 1; i <= upTo; i++) yield i;
  },
  { name: "count", streamReducer: { initialStateFn: () => [] as number[], reduceFn: (seen: number[], n: number) => [...seen, n], finalizeFn: () => undefined } },
);

const client = await weave.init(process.env.WEAVE_PROJECT!);
const [greeting, call] = await greet.invoke("renamed");
// The SDK's call handle is shared by all calls of one op: keep the id before calling greet again.
const renamedId = call.id!;
await call.setDisplayName("greeting, renamed");
await weave.withAttributes({ request_id: "r-1", tenant: { name: "acme" } }, () => greet("attributed"));
const streamed: number[] = [];
for await (const n of await count(3)) streamed.push(n);

const prompt = new weave.StringPrompt({ name: "greeter", content: "Say hello to {name}." });
const promptRef = await client.publish(prompt);
const promptBack = await weave.StringPrompt.get(client, promptRef.uri());

await client.waitForBatchProcessing();
const readBack = await client.getCall(renamedId);
const greetCalls = await client.getCalls({ op_names: [readBack.op_name!] });
console.log(
  JSON.stringify({
    greeting,
    renamedId,
    streamed,
    promptRef: promptRef.uri(),
    promptBack: promptBack.format({ name: "Ada" }),
    readBack: { id: readBack.id, display_name: readBack.display_name, output: readBack.output, inputs: readBack.inputs },
    greetCallIds: greetCalls.map((c) => c.id),
  }),
);
