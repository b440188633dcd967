import { describe, expect, it } from "vitest";
import { basic, KEY_ADMIN, serviceForFile } from "../support/service.js";
import { completeBatchJson, newRetryId, rawPost, remoteHttpHeaders, v2Path, type CompleteCallText } from "./sdk.js";

/**
 * The SDK's habits on the wire (spec §7): JSON bodies without Content-Type, JSON replies typed
 * application/json and streams application/jsonl, a 413 that makes it split a batch (its
 * requests stay under 31 MiB; the server's limit is 32 MiB), and a server_info whose versions
 * its PEP 440 parser reads.
 */
const service = serviceForFile();
const api = service.api;

const P = "acme/sdk-wire";
const MiB = 1024 * 1024;
const call = (i: number, inputs = "{}"): CompleteCallText => ({
  project_id: P, id: `019aa5f6-0000-7000-8000-${String(i).padStart(12, "0")}`, trace_id: "019aa5f6-0000-7000-8000-0000000000ff", op_name: "op",
  parent_id: null, started_at: "2026-11-21T16:00:00.000000Z", ended_at: "2026-11-21T16:00:01.000000Z", inputs, output: "null", summary: "{}",
});
/** A batch of `calls` calls whose body is `bytes` long, padded in the inputs. */
function batchOfSize(bytes: number, calls: number, from: number): string {
  const bare = completeBatchJson(Array.from({ length: calls }, (_, i) => call(from + i, `{"pad":""}`)));
  const pad = Math.floor((bytes - bare.length) / calls);
  const last = bytes - bare.length - pad * (calls - 1);
  const body = completeBatchJson(Array.from({ length: calls }, (_, i) => call(from + i, `{"pad":"${"x".repeat(i === calls - 1 ? last : pad)}"}`)));
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}

describe("JSON bodies", () => {
  it("are read whatever the Content-Type, or none, on every operation that takes one", async () => {
    const withBody = service.operations.filter((op) => op.body && !op.rawBody);
    expect(withBody.length).toBeGreaterThan(30);
    for (const op of withBody) {
      const path = op.path.replace(/\{([A-Za-z_]+)\}/g, (_m, name: string) => (name === "entity" ? "acme" : name === "project" ? "sdk-wire" : "x"));
      for (const contentType of [undefined, "text/plain", "application/octet-stream"]) {
        const headers: Record<string, string> = { authorization: basic(KEY_ADMIN), ...(contentType ? { "content-type": contentType } : {}) };
        const res = await rawPost(service.url, path, `{"project_id":1}`, headers, op.method.toUpperCase());
        // Parsed: the answer names the body's fields, or the request succeeds, or (a body of optional fields only)
        // the path's resource is not found; unparsed, it would say a body is missing.
        const detail = res.status === 422 ? (JSON.parse(res.text) as { detail: { loc: unknown[]; type: string }[] }).detail : [];
        expect({ op: op.id, contentType, status: res.status, missing: detail.some((d) => d.type === "missing" && d.loc.length === 1) }).toEqual({
          op: op.id, contentType, status: res.status === 200 || res.status === 404 ? res.status : 422, missing: false,
        });
      }
    }
  });

  it("calls/complete without Content-Type writes the calls", async () => {
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), completeBatchJson([call(1)]), remoteHttpHeaders(newRetryId()));
    expect({ status: res.status, type: res.headers["content-type"], body: res.text }).toEqual({ status: 200, type: "application/json; charset=utf-8", body: "{}" });
    expect((await api.json<{ call: { id: string } | null }>("/call/read", { project_id: P, id: call(1).id })).call?.id).toBe(call(1).id);
  });
});

describe("replies", () => {
  it("stream calls as application/jsonl to RemoteHTTP (Accept */*) and Stainless (Accept application/jsonl)", async () => {
    for (const accept of ["*/*", "application/jsonl"]) {
      const res = await rawPost(service.url, "/calls/stream_query", JSON.stringify({ project_id: P }), { ...remoteHttpHeaders(newRetryId()), accept });
      expect({ accept, status: res.status, type: res.headers["content-type"] }).toEqual({ accept, status: 200, type: "application/jsonl" });
      expect(res.text.endsWith("\n")).toBe(true);
      expect(res.text.trim().split("\n").map((l) => (JSON.parse(l) as { project_id: string }).project_id)).toContain(P);
    }
  });

  it("answer errors as JSON with message, refusals with x-should-retry: false", async () => {
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), `{"batch":[{"id":1}]}`, remoteHttpHeaders(newRetryId()));
    expect({ status: res.status, type: res.headers["content-type"], retry: res.headers["x-should-retry"] }).toEqual({
      status: 422, type: "application/json; charset=utf-8", retry: "false",
    });
    expect(typeof (JSON.parse(res.text) as { message: unknown }).message).toBe("string");
  });
});

describe("request size", () => {
  it("answers 413 to a batch over 32 MiB, so the SDK splits it, and writes nothing", async () => {
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), batchOfSize(32 * MiB + 1, 4, 100), remoteHttpHeaders(newRetryId()));
    expect({ status: res.status, retry: res.headers["x-should-retry"], body: JSON.parse(res.text) }).toEqual({
      status: 413, retry: "false", body: { detail: "request body too large", message: "request body too large" },
    });
    expect(await api.json("/calls/query_stats", { project_id: P, filter: { call_ids: [call(100).id] } })).toEqual({ count: 0 });
  });

  it("takes a batch just under the SDK's 31 MiB", async () => {
    const res = await rawPost(service.url, v2Path(P, "calls/complete"), batchOfSize(31 * MiB - 1, 31, 200), remoteHttpHeaders(newRetryId()));
    expect({ status: res.status, body: res.text }).toEqual({ status: 200, body: "{}" });
    expect(await api.json("/calls/query_stats", { project_id: P, filter: { call_ids: Array.from({ length: 31 }, (_, i) => call(200 + i).id) } })).toEqual({ count: 31 });
  });
});

describe("server_info", () => {
  /** PEP 440's public version scheme, as the SDK's `packaging.version.Version` accepts it (canonical forms). */
  const PEP_440 = /^([1-9][0-9]*!)?(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*((a|b|rc)(0|[1-9][0-9]*))?(\.post(0|[1-9][0-9]*))?(\.dev(0|[1-9][0-9]*))?$/;

  it("answers versions the SDK parses, and a minimum no SDK is below", async () => {
    const res = await api.get("/server_info");
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const info = (await res.json()) as { min_required_weave_python_version: string; trace_server_version: string };
    expect(info.min_required_weave_python_version).toBe("0.0.1");
    expect(info.min_required_weave_python_version).toMatch(PEP_440);
    expect(info.trace_server_version).toMatch(PEP_440);
  });
});
