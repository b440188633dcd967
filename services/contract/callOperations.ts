import {
  CallCreateBatchReq, CallCreateBatchRes, CallEndReq, CallEndV2Req, CallReadReq, CallReadRes, CallSchema, CallsDeleteReq, CallsDeleteRes, CallsQueryReq,
  CallsQueryStatsReq, CallsQueryStatsRes, CallStartReq, CallStartRes, CallStartV2Req, CallsUpsertCompleteReq, CallUpdateReq,
} from "./calls.js";
import { checkCallCreateBatch, checkCallEnd, checkCallStart } from "./callsFastCheck.js";
import { EmptyResponse, V2ProjectParams } from "./common.js";
import { BODY_PROJECT, operation, PATH_PROJECT } from "./operation.js";

/**
 * The operations on calls: their reads (query/callsRoutes.ts) and their writes, which go
 * through the queue (ingest/callsRoutes.ts). Not in calls.ts: the writes name the fast body
 * checks (callsFastCheck.ts), which import calls.ts, and the two would import each other.
 */

const TAG = "Calls";

export const callReadOp = operation({ id: "call_read", method: "post", path: "/call/read", summary: "Read a call", tag: TAG, body: CallReadReq, role: "viewer", scope: BODY_PROJECT, response: CallReadRes });
export const callsStreamQueryOp = operation({ id: "calls_stream_query", method: "post", path: "/calls/stream_query", summary: "Query calls, streamed as JSON lines", tag: TAG, body: CallsQueryReq, role: "viewer", scope: BODY_PROJECT, response: CallSchema, streamed: true });
export const callsQueryStatsOp = operation({ id: "calls_query_stats", method: "post", path: "/calls/query_stats", summary: "Count the calls a query matches", tag: TAG, body: CallsQueryStatsReq, role: "viewer", scope: BODY_PROJECT, response: CallsQueryStatsRes });

// Every write below is exact on a repeat under one retry id: ids it generates are derived from
// the retry id (ingest/callEvents.ts), and the merge rewrites the same call; the process remembers its
// answers besides. `/calls/delete` records its answer too.
export const callStartOp = operation({ id: "call_start", method: "post", path: "/call/start", summary: "Start a call", tag: TAG, body: CallStartReq, role: "writer", scope: { kind: "projects", of: ({ body }) => [body.start.project_id] }, response: CallStartRes, retries: "remembered", fastBody: checkCallStart, queued: true });
export const callEndOp = operation({ id: "call_end", method: "post", path: "/call/end", summary: "End a call", tag: TAG, body: CallEndReq, role: "writer", scope: { kind: "projects", of: ({ body }) => [body.end.project_id] }, response: EmptyResponse, retries: "remembered", fastBody: checkCallEnd, queued: true });
export const callUpsertBatchOp = operation({ id: "call_upsert_batch", method: "post", path: "/call/upsert_batch", summary: "Start and end calls in a batch", tag: TAG, body: CallCreateBatchReq, role: "writer", scope: { kind: "projects", of: ({ body }) => body.batch.map((item) => (item.mode === "start" ? item.req.start.project_id : item.req.end.project_id)) }, response: CallCreateBatchRes, retries: "remembered", fastBody: checkCallCreateBatch, queued: true });
export const callUpdateOp = operation({ id: "call_update", method: "post", path: "/call/update", summary: "Update a call's display name", tag: TAG, body: CallUpdateReq, role: "writer", scope: BODY_PROJECT, response: EmptyResponse, retries: "remembered", queued: true });
export const callsDeleteOp = operation({ id: "calls_delete", method: "post", path: "/calls/delete", summary: "Delete calls and all their descendants (also those still being stored, and children that arrive later). num_deleted counts the distinct ids asked for and accepted; descendants are not counted", tag: TAG, body: CallsDeleteReq, role: "admin", scope: BODY_PROJECT, response: CallsDeleteRes, retries: "recorded", queued: true });

// The Weave Python SDK's ingest (calls_complete mode and its eager path). The reference server
// hides v2 call/start and call/end from its OpenAPI document; they are listed here, since
// this document is for the people running the service, and no client is generated from it.
export const callsCompleteOp = operation({ id: "calls_complete", method: "post", path: "/v2/{entity}/{project}/calls/complete", summary: "Write finished calls, each start and end in one record", tag: TAG, params: V2ProjectParams, body: CallsUpsertCompleteReq, role: "writer", scope: PATH_PROJECT, response: EmptyResponse, retries: "remembered", queued: true });
export const callStartV2Op = operation({ id: "call_start_v2", method: "post", path: "/v2/{entity}/{project}/call/start", summary: "Start a call (eager ops, calls still running at shutdown)", tag: TAG, params: V2ProjectParams, body: CallStartV2Req, role: "writer", scope: PATH_PROJECT, response: CallStartRes, retries: "remembered", fastBody: checkCallStart, queued: true });
export const callEndV2Op = operation({ id: "call_end_v2", method: "post", path: "/v2/{entity}/{project}/call/end", summary: "End a call; with started_at, shown finished even before its start arrives", tag: TAG, params: V2ProjectParams, body: CallEndV2Req, role: "writer", scope: PATH_PROJECT, response: EmptyResponse, retries: "remembered", fastBody: checkCallEnd, queued: true });
