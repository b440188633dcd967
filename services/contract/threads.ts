import { Datetime, Limit, Offset, ProjectId } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { z } from "./zod.js";

/** The fields a threads query may sort on; anything else is refused with 422. */
export const THREAD_SORT_FIELDS = [
  "thread_id",
  "turn_count",
  "start_time",
  "last_updated",
  "p50_turn_duration_ms",
  "p99_turn_duration_ms",
] as const;
export type ThreadSortField = (typeof THREAD_SORT_FIELDS)[number];

export const ThreadSortBy = z
  .object({
    field: z.enum(THREAD_SORT_FIELDS),
    direction: z.enum(["asc", "desc"]),
  })
  .openapi("ThreadSortBy");
export type ThreadSortBy = z.infer<typeof ThreadSortBy>;

export const ThreadsQueryFilter = z
  .object({
    after_datetime: Datetime.nullish().openapi({ description: "Only threads whose start_time is after this time (exclusive)" }),
    before_datetime: Datetime.nullish().openapi({ description: "Only threads whose last_updated is before this time (exclusive)" }),
    thread_ids: z.array(z.string()).max(1000).nullish().openapi({ description: "Only these threads; empty means no restriction" }),
  })
  .openapi("ThreadsQueryFilter");
export type ThreadsQueryFilter = z.infer<typeof ThreadsQueryFilter>;

export const ThreadsQueryReq = z
  .object({
    project_id: ProjectId,
    filter: ThreadsQueryFilter.nullish(),
    limit: Limit,
    offset: Offset,
    sort_by: z.array(ThreadSortBy).max(10).nullish().openapi({ description: "Default: last_updated desc" }),
  })
  .openapi("ThreadsQueryReq");
export type ThreadsQueryReq = z.infer<typeof ThreadsQueryReq>;

/** One line of /threads/stream_query: figures over the thread's turn calls only. */
export const ThreadSchema = z
  .object({
    thread_id: z.string(),
    turn_count: z.number().int(),
    start_time: z.string().openapi({ description: "Earliest turn start" }),
    last_updated: z.string().openapi({ description: "Latest turn end; the latest turn start while no turn has ended" }),
    first_turn_id: z.string().nullable().openapi({ description: "The earliest-started turn" }),
    last_turn_id: z.string().nullable().openapi({ description: "The latest-ended turn; the latest-started while no turn has ended" }),
    p50_turn_duration_ms: z.number().nullable().openapi({ description: "Median duration of the finished turns; null when none finished" }),
    p99_turn_duration_ms: z.number().nullable().openapi({ description: "99th percentile duration of the finished turns; null when none finished" }),
  })
  .openapi("ThreadSchema");
export type ThreadSchema = z.infer<typeof ThreadSchema>;

const TAG = "Threads";

export const threadsStreamQueryOp = operation({
  id: "threads_stream_query",
  method: "post",
  path: "/threads/stream_query",
  summary: "Query threads (figures over their turn calls), streamed as JSON lines",
  tag: TAG,
  body: ThreadsQueryReq,
  role: "viewer",
  scope: BODY_PROJECT,
  response: ThreadSchema,
  streamed: true,
});
