import { CallsFilter } from "./calls.js";
import { Datetime, ProjectId } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { QuerySchema } from "./queryExpr.js";
import { z } from "./zod.js";

export const DEFAULT_USAGE_LIMIT = 10_000;
export const MAX_USAGE_LIMIT = 100_000;
export const MAX_USAGE_CALL_IDS = 1000;

const UsageLimit = z
  .number()
  .int()
  .min(1)
  .max(MAX_USAGE_LIMIT)
  .nullish()
  .openapi({
    description:
      `The most calls read at once (default ${DEFAULT_USAGE_LIMIT}): whole traces are read in batches of at most this many calls. ` +
      "A single trace holding more calls, or (/trace/usage) more matching calls than this, is refused with 413.",
  });

export const CallsUsageReq = z
  .object({
    project_id: ProjectId,
    call_ids: z.array(z.string().min(1)).max(MAX_USAGE_CALL_IDS),
    include_costs: z.boolean().nullish(),
    limit: UsageLimit,
    skip_large_traces: z.boolean().nullish().openapi({
      description: "Instead of refusing (413) a trace holding more calls than limit, leave its requested calls out of call_usage and list them in skipped_call_ids.",
    }),
  })
  .openapi("CallsUsageReq");
export type CallsUsageReq = z.infer<typeof CallsUsageReq>;

export const TraceUsageReq = z
  .object({
    project_id: ProjectId,
    filter: CallsFilter.nullish(),
    query: QuerySchema.nullish(),
    include_costs: z.boolean().nullish(),
    limit: UsageLimit,
  })
  .openapi("TraceUsageReq");
export type TraceUsageReq = z.infer<typeof TraceUsageReq>;

export const LLMAggregatedUsage = z
  .object({
    requests: z.number(),
    prompt_tokens: z.number(),
    completion_tokens: z.number(),
    total_tokens: z.number(),
    prompt_tokens_total_cost: z.number().optional().openapi({ description: "With include_costs: Σ prompt_tokens × the price in force at each call's start (0 without a price)" }),
    completion_tokens_total_cost: z.number().optional(),
  })
  .openapi("LLMAggregatedUsage", {
    description:
      "Usage of one model by a call and all its descendants: the sum of each one's own usage, counted once whichever client " +
      "wrote the trace (a call of the Weave SDKs, whose summary already holds its children's, is its summary less its direct " +
      "children's summaries, never below zero; any other call is its summary). prompt_tokens counts prompt_tokens, else " +
      "input_tokens; completion_tokens counts completion_tokens, else output_tokens; total_tokens is total_tokens, else their sum.",
  });

export const UsageRes = z
  .object({
    call_usage: z.record(z.string(), z.record(z.string(), LLMAggregatedUsage)).openapi({
      description: "Per call id, per model. /calls/usage answers every requested id ({} when unknown or deleted); /trace/usage every matching call.",
    }),
    unfinished_call_ids: z.array(z.string()).openapi({ description: "Calls of the answer (the calls and their descendants) that have not ended: their usage may still grow." }),
    skipped_call_ids: z.array(z.string()).optional().openapi({
      description: "/calls/usage with skip_large_traces only: the requested calls whose trace holds more calls than limit, sorted; their usage is not given.",
    }),
  })
  .openapi("UsageRes");

// ---- /calls/stats ------------------------------------------------------------------

export const MAX_STATS_RANGE_DAYS = 31;
export const MAX_STATS_BUCKETS = 10_000;

const Aggregation = z.enum(["sum", "avg", "min", "max", "count"]);
const Percentiles = z
  .array(z.number().min(0).max(100))
  .max(10)
  .nullish()
  .openapi({ description: "Percentiles 0-100; nearest rank: the value at rank max(1, ceil(p/100 × n)) of the n values in ascending order. Default []." });

export const USAGE_METRICS = ["input_tokens", "output_tokens", "total_tokens", "input_cost", "output_cost", "total_cost"] as const;
export const CALL_METRICS = ["call_count", "error_count", "latency_ms"] as const;

export const UsageMetricSpec = z
  .object({
    metric: z.enum(USAGE_METRICS),
    aggregations: z.array(Aggregation).max(5).nullish().openapi({ description: "Default [sum]." }),
    percentiles: Percentiles,
  })
  .openapi("UsageMetricSpec", {
    description:
      "A per-model metric over each call's own usage (as in /calls/usage: a Weave SDK's summary less its direct children's, any " +
      "other call's summary). Each (call, model) with some own usage is one value: input_tokens = prompt_tokens, else input_tokens; output_tokens = " +
      "completion_tokens, else output_tokens; total_tokens = total_tokens, else input + output; *_cost = tokens × the price in " +
      "force at the call's start (project price, else default; 0 without a price); total_cost = input_cost + output_cost.",
  });

export const CallMetricSpec = z
  .object({
    metric: z.enum(CALL_METRICS),
    aggregations: z.array(Aggregation).max(5).nullish().openapi({ description: "Default [sum]." }),
    percentiles: Percentiles,
  })
  .openapi("CallMetricSpec", {
    description:
      "A per-call metric. Each call is one value: call_count = 1; error_count = 1 when the call raised (exception set), else 0; " +
      "latency_ms = ended_at − started_at in ms, no value while the call runs.",
  });

export const CallStatsReq = z
  .object({
    project_id: ProjectId,
    start: Datetime.openapi({ description: "Inclusive: calls with started_at ≥ start." }),
    end: Datetime.nullish().openapi({ description: `Exclusive; default now. end − start must be positive and at most ${MAX_STATS_RANGE_DAYS} days (422 otherwise).` }),
    granularity: z
      .number()
      .int()
      .min(1)
      .max(MAX_STATS_RANGE_DAYS * 86_400)
      .nullish()
      .openapi({
        description:
          "Bucket width in seconds. Default from the range: ≤ 2 h → 300, ≤ 12 h → 3600, ≤ 3 d → 21600, ≤ 14 d → 43200, else 86400. " +
          `Raised when the range would need more than ${MAX_STATS_BUCKETS} buckets.`,
      }),
    usage_metrics: z.array(UsageMetricSpec).max(12).nullish().openapi({
      description: "Default when absent: input_tokens, output_tokens, total_tokens with [sum]. [] asks for no usage buckets.",
    }),
    call_metrics: z.array(CallMetricSpec).max(6).nullish().openapi({
      description: "Default when absent: call_count [sum], error_count [sum], latency_ms [avg] with percentiles [50, 95, 99]. [] asks for no call buckets.",
    }),
    filter: CallsFilter.nullish(),
    timezone: z.string().min(1).max(64).nullish().openapi({
      description: "IANA name (default UTC). Buckets are aligned to multiples of granularity in this zone's wall-clock time, at the offset in force at start.",
    }),
  })
  .openapi("CallStatsReq");
export type CallStatsReq = z.infer<typeof CallStatsReq>;
export type UsageMetricSpec = z.infer<typeof UsageMetricSpec>;
export type CallMetricSpec = z.infer<typeof CallMetricSpec>;

const BucketValue = z.union([z.number(), z.string(), z.null()]);

export const CallStatsRes = z
  .object({
    start: z.string().openapi({ description: "The requested start (ISO 8601 UTC)." }),
    end: z.string().openapi({ description: "The resolved end (ISO 8601 UTC)." }),
    granularity: z.number().int().openapi({ description: "Bucket width used, in seconds." }),
    timezone: z.string(),
    usage_buckets: z.array(z.record(z.string(), BucketValue)).openapi({
      description:
        "One object per (bucket, model) that has usage, ordered by timestamp then model: {timestamp, model, " +
        "<aggregation>_<metric>: number|null, p<percentile>_<metric>: number|null}, e.g. {timestamp, model, sum_input_tokens, " +
        "p95_total_tokens}. timestamp is the bucket's start (ISO 8601 UTC).",
    }),
    call_buckets: z.array(z.record(z.string(), BucketValue)).openapi({
      description:
        "One object per bucket of the range, empty buckets included, ordered by timestamp: {timestamp, <aggregation>_<metric>, " +
        "p<percentile>_<metric>}, e.g. {timestamp, sum_call_count, sum_error_count, avg_latency_ms, p50_latency_ms, p95_latency_ms, " +
        "p99_latency_ms}. In a bucket without calls, sum and count are 0 and every other figure null; latency figures are null " +
        "when no call of the bucket has ended.",
    }),
  })
  .openapi("CallStatsRes");

const TAG = "Calls";

export const callsUsageOp = operation({ id: "calls_usage", method: "post", path: "/calls/usage", summary: "Usage per model of calls, their descendants included", tag: TAG, body: CallsUsageReq, role: "viewer", scope: BODY_PROJECT, response: UsageRes });
export const traceUsageOp = operation({ id: "trace_usage", method: "post", path: "/trace/usage", summary: "Usage per model of the calls a filter matches, their descendants included", tag: TAG, body: TraceUsageReq, role: "viewer", scope: BODY_PROJECT, response: UsageRes });
export const callsStatsOp = operation({ id: "calls_stats", method: "post", path: "/calls/stats", summary: "Call and usage statistics in time buckets", tag: TAG, body: CallStatsReq, role: "viewer", scope: BODY_PROJECT, response: CallStatsRes });
