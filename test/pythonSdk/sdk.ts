import { request } from "node:http";
import type { CallSchema } from "../../services/contract/calls.js";
import { basic, KEY_ACME } from "../support/service.js";

/**
 * What the Weave Python SDK puts on the wire, replayed without the SDK (it cannot be installed
 * on these machines: no PyPI). Facts read from the SDK's source (wandb/weave):
 * RemoteHTTPTraceServer and the tsi models @ 0c87398d (payload fields: also
 * 9d8b9c08), http_utils @ 9d8b9c08 (headers), CallBatchProcessor @ abcb528b / 0324da05
 * (calls_complete batching), the client gap models @ 0e5ec038 (CompletedCallSchemaForInsert
 * field order), the Stainless binding @ a92c7c0c, server_info @ 086ba9ac.
 *
 * RemoteHTTP sends each JSON body as the bytes of pydantic's `model_dump_json` (compact, every
 * field present, null for unset ones, UTF-8 unescaped, fields in model order) with no
 * Content-Type header; `rawPost` sends exactly the given bytes and headers over node:http,
 * which adds only Host, Content-Length and Connection.
 */

export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

export function rawPost(baseUrl: string, path: string, body: string | Buffer, headers: Record<string, string>, method = "POST"): Promise<RawAnswer> {
  const url = new URL(path, baseUrl);
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers: { ...headers, "content-length": String(bytes.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(bytes);
  });
}

/** The headers of a RemoteHTTP request (newest copy): no Content-Type; a retry id per logical request. */
export function remoteHttpHeaders(retryId: string, extra: Record<string, string> = {}, key = KEY_ACME): Record<string, string> {
  return {
    authorization: basic(key),
    "user-agent": "python-httpx/0.28.1",
    accept: "*/*",
    "accept-encoding": "gzip, deflate",
    "x-weave-client-capabilities": "trace_id_on_end,eval_child_meta",
    "x-weave-retry-id": retryId,
    ...extra,
  };
}

/** The headers of the Stainless binding: JSON content type, no capabilities header. */
export function stainlessHeaders(retryId: string, key = KEY_ACME): Record<string, string> {
  return {
    authorization: basic(key),
    "content-type": "application/json",
    accept: "application/json",
    "user-agent": "WeaveTrace/Python 0.0.1",
    "x-stainless-async": "false",
    "x-weave-retry-id": retryId,
  };
}

let retryCounter = 0;
/** A fresh retry id, as the SDK's retry context makes one per logical request (a UUID). */
export function newRetryId(): string {
  retryCounter++;
  return `7f3c2a10-5d4e-4b6a-9c8d-${String(retryCounter).padStart(12, "0")}`;
}

/** The attributes the SDK puts on every call it starts. */
export const SDK_ATTRIBUTES = {
  weave: { client_version: "0.52.23", source: "python-sdk", os_name: "Linux", os_version: "#1 SMP PREEMPT_DYNAMIC Debian 6.1.0", os_release: "6.1.0-28-amd64", sys_version: "3.12.7 (main, Oct  1 2026, 08:24:14) [GCC 12.2.0]" },
};
const ATTRIBUTES_JSON = JSON.stringify(SDK_ATTRIBUTES);

/** One `CompletedCallSchemaForInsert` as `model_dump_json` writes it (field order of the model). */
export interface CompleteCallText {
  project_id: string;
  id: string;
  trace_id: string;
  op_name: string;
  started_at: string;
  ended_at: string;
  inputs: string;
  parent_id: string | null;
  display_name?: string | null;
  exception?: string | null;
  output: string;
  summary: string;
}

const str = (v: string | null | undefined): string => (v === null || v === undefined ? "null" : JSON.stringify(v));

export function completeCallJson(c: CompleteCallText): string {
  return (
    `{"project_id":${str(c.project_id)},"id":${str(c.id)},"trace_id":${str(c.trace_id)},"op_name":${str(c.op_name)},` +
    `"started_at":${str(c.started_at)},"ended_at":${str(c.ended_at)},"attributes":${ATTRIBUTES_JSON},"inputs":${c.inputs},` +
    `"display_name":${str(c.display_name)},"parent_id":${str(c.parent_id)},"thread_id":null,"turn_id":null,"otel_dump":null,` +
    `"exception":${str(c.exception)},"output":${c.output},"summary":${c.summary},"wb_user_id":null,"wb_run_id":null,` +
    `"wb_run_step":null,"wb_run_step_end":null}`
  );
}

/** `CallsUpsertCompleteReq` = `{"batch": [...]}`. */
export const completeBatchJson = (calls: readonly CompleteCallText[]): string => `{"batch":[${calls.map(completeCallJson).join(",")}]}`;

export interface StartText {
  project_id: string;
  /** Null: the server generates it (the single, unbatched start). */
  id: string | null;
  op_name: string;
  display_name?: string | null;
  trace_id: string | null;
  parent_id: string | null;
  started_at: string;
  inputs: string;
}

/** `StartedCallSchemaForInsert` (tsi field order, `otel_dump` included). */
export function startJson(s: StartText): string {
  return (
    `{"project_id":${str(s.project_id)},"id":${str(s.id)},"op_name":${str(s.op_name)},"display_name":${str(s.display_name)},` +
    `"trace_id":${str(s.trace_id)},"parent_id":${str(s.parent_id)},"thread_id":null,"turn_id":null,"started_at":${str(s.started_at)},` +
    `"attributes":${ATTRIBUTES_JSON},"inputs":${s.inputs},"otel_dump":null,"wb_user_id":null,"wb_run_id":null,"wb_run_step":null}`
  );
}

export interface EndText {
  project_id: string;
  id: string;
  ended_at: string;
  exception?: string | null;
  output: string;
  summary: string;
  trace_id: string | null;
  is_eval: boolean | null;
  started_at: string | null;
}

/** `EndedCallSchemaForInsert` with the newer fields (`trace_id`, `is_eval`, `started_at`). */
export function endJson(e: EndText): string {
  return (
    `{"project_id":${str(e.project_id)},"id":${str(e.id)},"ended_at":${str(e.ended_at)},"exception":${str(e.exception)},` +
    `"output":${e.output},"summary":${e.summary},"wb_run_step_end":null,"trace_id":${str(e.trace_id)},` +
    `"is_eval":${e.is_eval === null ? "null" : String(e.is_eval)},"started_at":${str(e.started_at)}}`
  );
}

/** `/v2/{entity}/{project}/...` from a project id, split at the first `/` as the SDK does. */
export const v2Path = (projectId: string, rest: string): string => `/v2/${projectId}/${rest}`;

/** What `/calls/stream_query` and `/call/read` answer for a call (no storage sizes or usernames asked). */
export type ReadCall = Omit<CallSchema, "storage_size_bytes" | "total_storage_size_bytes" | "wb_username">;
