import { callsStatsOp, callsUsageOp, DEFAULT_USAGE_LIMIT, traceUsageOp } from "../contract/usage.js";
import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { CostsRepository } from "../store/costs/costsRepository.js";
import { DEFAULT_CALL_METRICS, DEFAULT_USAGE_METRICS, StatsRepository } from "../store/usage/statsRead.js";
import { resolveStatsWindow } from "../store/statsWindow.js";
import { UsageRepository } from "../store/usage/usageRead.js";
import type { ProjectRetention } from "../store/projects/retention.js";
import { microsToIso } from "../times.js";

/** POST /calls/usage, /trace/usage, /calls/stats. */
export function mountUsageRoutes(api: HttpApi, deps: { store: ClickHouseStore; retention: ProjectRetention }): void {
  const costs = new CostsRepository(deps.store);
  const usage = new UsageRepository(deps.store, costs, deps.retention);
  const stats = new StatsRepository(deps.store, deps.retention);

  api.mount(callsUsageOp, async ({ body: req }) => {
    return usage.callsUsage({
      projectId: req.project_id,
      callIds: req.call_ids,
      includeCosts: !!req.include_costs,
      limit: req.limit ?? DEFAULT_USAGE_LIMIT,
      skipLargeTraces: !!req.skip_large_traces,
    });
  });

  api.mount(traceUsageOp, async ({ body: req }) => {
    return usage.traceUsage({
      projectId: req.project_id,
      filter: req.filter,
      query: req.query,
      includeCosts: !!req.include_costs,
      limit: req.limit ?? DEFAULT_USAGE_LIMIT,
    });
  });

  api.mount(callsStatsOp, async ({ body: req }) => {
    const window = resolveStatsWindow(req, Date.now() * 1000);
    const usageMetrics = req.usage_metrics ?? DEFAULT_USAGE_METRICS;
    const callMetrics = req.call_metrics ?? DEFAULT_CALL_METRICS;
    if (usageMetrics.some((m) => m.metric.endsWith("_cost"))) await costs.syncDefaults();
    const [usage_buckets, call_buckets] = await Promise.all([
      stats.usageBuckets(req.project_id, req.filter, window, usageMetrics),
      stats.callBuckets(req.project_id, req.filter, window, callMetrics),
    ]);
    return {
      start: microsToIso(window.startMicros),
      end: microsToIso(window.endMicros),
      granularity: window.granularitySeconds,
      timezone: window.timezone,
      usage_buckets,
      call_buckets,
    };
  });
}
