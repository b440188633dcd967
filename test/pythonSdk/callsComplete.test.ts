import { describe, expect, it } from "vitest";
import { storeOn } from "../support/database.js";
import { KEY_OTHER, serviceForFile } from "../support/service.js";
import { completeBatchJson, newRetryId, rawPost, remoteHttpHeaders, SDK_ATTRIBUTES, stainlessHeaders, v2Path, type CompleteCallText, type ReadCall } from "./sdk.js";

/**
 * An op traced in calls_complete mode (the SDK's default in its newer settings): the SDK pairs
 * each start with its end in memory and sends the finished calls, children before their
 * parent (they finish first), in one `POST /v2/{entity}/{project}/calls/complete`.
 */
const service = serviceForFile();
const api = service.api;

const P = "acme/sdk-complete";
const TRACE = "019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0a00";
const ROOT = "019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0a01";
const LLM = "019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0a02";
const TOKENIZE = "019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0a03";
const op = (name: string) => `weave:///${P}/op/${name}:Zx2bY9ncQ1AL0Xv0aaYFm7bGu0V2xOYyyNLhKDRbGJc`;
const USAGE = `{"gpt-4o-mini-2024-07-18":{"requests":1,"completion_tokens":12,"prompt_tokens":30,"total_tokens":42,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens_details":{"cached_tokens":0}}}`;

const llm: CompleteCallText = {
  project_id: P, id: LLM, trace_id: TRACE, op_name: op("openai.chat.completions.create"), parent_id: ROOT,
  started_at: "2026-11-21T10:00:00.200000Z", ended_at: "2026-11-21T10:00:02.000000Z",
  inputs: `{"self":"weave:///${P}/object/OpenAI:kX9","messages":[{"role":"user","content":"Résume: ünïcode ✓"}],"model":"gpt-4o-mini","temperature":0.0}`,
  output: `{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"Short."},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}`,
  summary: `{"usage":${USAGE}}`,
};
const tokenize: CompleteCallText = {
  project_id: P, id: TOKENIZE, trace_id: TRACE, op_name: op("tokenize"), parent_id: ROOT,
  started_at: "2026-11-21T10:00:02.100000+00:00", ended_at: "2026-11-21T10:00:02.300000+00:00",
  inputs: `{"text":"Short."}`, exception: "ValueError: empty vocabulary", output: "null", summary: "{}",
};
const root: CompleteCallText = {
  project_id: P, id: ROOT, trace_id: TRACE, op_name: op("summarize"), parent_id: null, display_name: "summarize #1",
  started_at: "2026-11-21T10:00:00.100000Z", ended_at: "2026-11-21T10:00:02.350000Z",
  inputs: `{"text":"Ünïcode text to summarize"}`, output: `"Short."`, summary: `{"usage":${USAGE},"status_counts":{"success":2,"error":1}}`,
};

const read = async (id: string, project = P) => (await api.json<{ call: ReadCall | null }>("/call/read", { project_id: project, id })).call;

describe("calls/complete as RemoteHTTP sends it (model_dump_json, no Content-Type)", () => {
  it("answers {} as JSON, and each call reads back whole", async () => {
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), completeBatchJson([llm, tokenize, root]), remoteHttpHeaders(newRetryId()));
    expect({ status: res.status, body: res.text }).toEqual({ status: 200, body: "{}" });
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");

    const calls = await api.lines<ReadCall>("/calls/stream_query", { project_id: P, filter: { trace_ids: [TRACE] } });
    expect(calls.map((c) => c.id)).toEqual([ROOT, LLM, TOKENIZE]);
    expect(calls[0]).toEqual({
      id: ROOT, project_id: P, op_name: op("summarize"), display_name: "summarize #1", trace_id: TRACE, parent_id: null, thread_id: null,
      turn_id: null, started_at: "2026-11-21T10:00:00.100000Z", ended_at: "2026-11-21T10:00:02.350000Z", exception: null,
      attributes: SDK_ATTRIBUTES, inputs: { text: "Ünïcode text to summarize" }, output: "Short.",
      summary: {
        usage: JSON.parse(USAGE), status_counts: { success: 2, error: 1 },
        weave: { status: "descendant_error", trace_name: "summarize #1", latency_ms: 2250 },
      },
      wb_user_id: "alice", wb_run_id: null, wb_run_step: null, wb_run_step_end: null, deleted_at: null,
    } satisfies ReadCall);
    expect(calls[1]).toEqual({
      id: LLM, project_id: P, op_name: op("openai.chat.completions.create"), display_name: null, trace_id: TRACE, parent_id: ROOT,
      thread_id: null, turn_id: null, started_at: "2026-11-21T10:00:00.200000Z", ended_at: "2026-11-21T10:00:02.000000Z", exception: null,
      attributes: SDK_ATTRIBUTES, inputs: JSON.parse(llm.inputs), output: JSON.parse(llm.output),
      summary: { usage: JSON.parse(USAGE), weave: { status: "success", trace_name: "openai.chat.completions.create", latency_ms: 1800 } },
      wb_user_id: "alice", wb_run_id: null, wb_run_step: null, wb_run_step_end: null, deleted_at: null,
    } satisfies ReadCall);
    expect(calls[2]).toMatchObject({
      id: TOKENIZE, parent_id: ROOT, started_at: "2026-11-21T10:00:02.100000Z", ended_at: "2026-11-21T10:00:02.300000Z",
      exception: "ValueError: empty vocabulary", output: null, summary: { weave: { status: "error", trace_name: "tokenize", latency_ms: 200 } },
    });
    expect(await read(ROOT)).toEqual(calls[0]);
    expect(await read(TOKENIZE)).toEqual(calls[2]);
  });

  it("writes each call as one finished row: never a started half", async () => {
    const store = await storeOn(service.database);
    try {
      const rows = await store.rows<{ id: string; ended_at: string | null }>("test_rows", {
        sql: "SELECT id, ended_at FROM calls WHERE project_id = {pb_0:String}",
        params: { pb_0: { type: "String", value: P } },
      });
      expect(rows.length).toBeGreaterThanOrEqual(3);
      expect(rows.filter((r) => r.ended_at === null)).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("takes the same batch from the Stainless binding (application/json), and a resend rewrites the same calls", async () => {
    const again = { ...root, display_name: "summarize #1" };
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), completeBatchJson([llm, tokenize, again]), stainlessHeaders(newRetryId()));
    expect({ status: res.status, body: res.text }).toEqual({ status: 200, body: "{}" });
    expect(await api.json("/calls/query_stats", { project_id: P })).toEqual({ count: 3 });
  });

  it("takes a call whose summary is null (a client model types it optional) as an empty summary", async () => {
    const id = "019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0a0f";
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), completeBatchJson([{ ...tokenize, id, trace_id: id, parent_id: null, exception: null, summary: "null" }]), remoteHttpHeaders(newRetryId()));
    expect(res.status).toBe(200);
    expect((await read(id))?.summary).toEqual({ weave: { status: "success", trace_name: "tokenize", latency_ms: 200 } });
  });
});

describe("the path's project", () => {
  it("must be every item's project: 422 at the item, nothing written", async () => {
    const stray = { ...llm, id: "019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0b01", project_id: "acme/elsewhere" };
    const first = { ...llm, id: "019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0b02" };
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), completeBatchJson([first, stray]), remoteHttpHeaders(newRetryId()));
    expect(res.status).toBe(422);
    expect(res.headers["x-should-retry"]).toBe("false");
    expect(JSON.parse(res.text)).toEqual({
      detail: [{ loc: ["body", "batch", 1, "project_id"], msg: `project_id acme/elsewhere is not the project of the path, ${P}`, type: "project_mismatch" }],
      message: `body.batch.1.project_id: project_id acme/elsewhere is not the project of the path, ${P}`,
    });
    expect(await read(first.id)).toBeNull();
    expect(await read(stray.id, "acme/elsewhere")).toBeNull();
  });

  it("is checked against the key: another entity's key gets 403 and writes nothing", async () => {
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), completeBatchJson([{ ...llm, id: "019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0c01" }]), remoteHttpHeaders(newRetryId(), {}, KEY_OTHER));
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text)).toEqual({ detail: `this key may not reach project ${P}`, message: `this key may not reach project ${P}` });
    expect(await read("019aa1b2-7c3d-7e4f-8a5b-6c7d8e9f0c01")).toBeNull();
  });

  it("answers 422 at the path for a segment with whitespace", async () => {
    const res = await rawPost(service.url, "/v2/acme/sdk%20complete/calls/complete", completeBatchJson([]), remoteHttpHeaders(newRetryId()));
    expect(res.status).toBe(422);
    expect(JSON.parse(res.text).detail[0].loc).toEqual(["path", "project"]);
  });
});
