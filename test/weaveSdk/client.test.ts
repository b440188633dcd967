import { describe, expect, it } from "vitest";
import { client, serviceForFile } from "../support/service.js";
import { runSdk } from "./runSdk.js";
import { byOpName, SDK_ATTRIBUTES, sdkProject } from "./support.js";

/** The unmodified SDK's other paths (scripts/client.ts): /call/update, attributes, a streamed op, a prompt, and the SDK reading calls back. */
const P = "acme/sdk-client";
const service = serviceForFile();

interface ClientResult {
  greeting: string;
  renamedId: string;
  streamed: number[];
  promptRef: string;
  promptBack: string;
  readBack: { id: string; display_name: string | null; output: unknown; inputs: unknown };
  greetCallIds: string[];
}

describe("the Weave TypeScript SDK: renaming calls, attributes, streams, prompts, reading calls", () => {
  it("stores what each path sends, and the SDK reads its own calls and prompt back", async () => {
    const run = await runSdk<ClientResult>("client", service.url, P);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    const p = sdkProject(client(service.url), P);
    const calls = await p.calls();
    expect(calls).toHaveLength(3);
    const [renamed, attributed] = byOpName(calls, "greet");
    const [count] = byOpName(calls, "count");

    expect(renamed).toMatchObject({ id: run.result.renamedId, display_name: "greeting, renamed", output: "hello renamed", attributes: SDK_ATTRIBUTES });
    expect(attributed).toMatchObject({ inputs: { arg0: "attributed" }, display_name: null });
    expect(attributed!.attributes).toEqual({ ...SDK_ATTRIBUTES, request_id: "r-1", tenant: { name: "acme" } });
    expect(count).toMatchObject({ inputs: { arg0: 3 }, output: [1, 2, 3], exception: null });
    expect(run.result.streamed).toEqual([1, 2, 3]);

    // The SDK's own reads: getCall by id, getCalls by op name.
    expect(run.result.greeting).toBe("hello renamed");
    expect(run.result.readBack).toEqual({ id: renamed!.id, display_name: "greeting, renamed", output: "hello renamed", inputs: { arg0: "renamed" } });
    expect(run.result.greetCallIds.sort()).toEqual([renamed!.id, attributed!.id].sort());

    expect(run.result.promptBack).toBe("Say hello to Ada.");
    const prompt = await p.readRef(run.result.promptRef);
    expect(prompt).toMatchObject({ object_id: "greeter", base_object_class: "Prompt", leaf_object_class: "StringPrompt", val: { _type: "StringPrompt", content: "Say hello to {name}.", name: "greeter" } });
  });
});
