import { describe, expect, it } from "vitest";
import { client, serviceForFile } from "../support/service.js";
import { runSdk } from "./runSdk.js";
import { byOpName, opSource, SDK_ATTRIBUTES, sdkProject } from "./support.js";

/** The unmodified SDK, run as a user would (scripts/ops.ts), then what it logged read back through the HTTP API. */
const P = "acme/sdk-ops";
const service = serviceForFile();

const USAGE = { "gpt-4o-mini": { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8, requests: 1 } };

describe("the Weave TypeScript SDK: ops with nested and failing calls", () => {
  it("returns the ops' results, lets the user's own error through, and stores the calls linked, with op refs that resolve", async () => {
    const run = await runSdk("ops", service.url, P);
    expect(run.result, run.stderr).toEqual({ output: { doubled: 42, caught: "refused 42" }, thrown: "Refusal: refused 7" });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");

    const p = sdkProject(client(service.url), P);
    const calls = await p.calls();
    expect(calls).toHaveLength(4);
    const [pipeline] = byOpName(calls, "pipeline");
    const [double] = byOpName(calls, "double");
    const [refuseChild, refuseRoot] = byOpName(calls, "refuse");

    expect(pipeline).toMatchObject({ parent_id: null, trace_id: expect.any(String), inputs: { arg0: 21 }, output: { doubled: 42, caught: "refused 42" }, exception: null });
    expect(double).toMatchObject({ parent_id: pipeline!.id, trace_id: pipeline!.trace_id, inputs: { arg0: 21 }, output: { doubled: 42 }, exception: null });
    expect(refuseChild).toMatchObject({ parent_id: pipeline!.id, trace_id: pipeline!.trace_id, inputs: { arg0: 42 }, output: null, exception: "refused 42" });
    expect(refuseRoot).toMatchObject({ parent_id: null, inputs: { arg0: 7 }, output: null, exception: "refused 7" });
    expect(refuseRoot!.trace_id).not.toBe(pipeline!.trace_id);
    for (const c of calls) {
      expect(c.attributes).toEqual(SDK_ATTRIBUTES);
      expect(c.wb_user_id).toBe("alice");
      expect(c.ended_at).not.toBeNull();
    }

    // The SDK rolls a child's usage up into its parent's summary; the service adds each trace's status.
    expect(double!.summary).toMatchObject({ usage: USAGE, weave: { status: "success", trace_name: "double" } });
    expect(pipeline!.summary).toMatchObject({ usage: USAGE, weave: { status: "success", trace_name: "pipeline" } });
    expect(refuseChild!.summary).toMatchObject({ weave: { status: "error" } });
    expect(refuseChild!.summary).not.toHaveProperty("usage");

    // Both refuse calls name one op version; each op ref resolves to the op's source.
    expect(refuseRoot!.op_name).toBe(refuseChild!.op_name);
    for (const [call, name] of [[pipeline, "pipeline"], [double, "double"], [refuseChild, "refuse"]] as const) {
      expect(call!.op_name).toMatch(new RegExp(`^weave:///${P}/op/${name}:[A-Za-z0-9]+$`));
    }
    // (tsx hands the SDK the function as esbuild printed it: compare without whitespace)
    const source = async (ref: string) => (await opSource(p, ref)).replace(/\s/g, "");
    expect(await source(refuseRoot!.op_name)).toContain("thrownewRefusal(`refused${x}`)");
    expect(await source(double!.op_name)).toContain("doubled:x*2");
    expect(await source(pipeline!.op_name)).toContain("awaitdouble(x)");
  });
});
