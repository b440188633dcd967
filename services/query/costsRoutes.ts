import { costCreateOp, costPurgeOp, costQueryOp } from "../contract/costs.js";
import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { CostsRepository, type NewPrice } from "../store/costs/costsRepository.js";
import { costsOfUsage, usageOfSummary, type ModelUsage } from "../store/costs/pricing.js";
import { toCostRecord } from "../store/costs/priceRows.js";
import type { CallEnricher } from "./callsRoutes.js";
import { isoToMicros } from "../times.js";
import { isJsonObject } from "../json.js";

/** POST /cost/create, /cost/query, /cost/purge. */
export function mountCostRoutes(api: HttpApi, deps: { store: ClickHouseStore }): void {
  const costs = new CostsRepository(deps.store);

  api.mount(costCreateOp, async ({ body: req }, ctx) => {
    const now = Date.now() * 1000;
    const prices: NewPrice[] = Object.entries(req.costs).map(([llmId, c]) => ({
      llm_id: llmId,
      provider_id: c.provider_id ?? "default",
      prompt_token_cost: c.prompt_token_cost,
      completion_token_cost: c.completion_token_cost,
      prompt_token_cost_unit: c.prompt_token_cost_unit ?? "USD",
      completion_token_cost_unit: c.completion_token_cost_unit ?? "USD",
      cache_read_input_token_cost: c.cache_read_input_token_cost ?? 0,
      cache_creation_input_token_cost: c.cache_creation_input_token_cost ?? 0,
      effective_date: c.effective_date ? isoToMicros(c.effective_date)! : now,
    }));
    return { ids: await costs.create(req.project_id, prices, ctx.principal.username) };
  });

  api.mount(costQueryOp, async ({ body: req }) => {
    const rows = await costs.query({ projectId: req.project_id, query: req.query, sortBy: req.sort_by, limit: req.limit, offset: req.offset });
    return { results: rows.map((r) => toCostRecord(r, req.fields ?? [])) };
  });

  api.mount(costPurgeOp, async ({ body: req }) => {
    await costs.purge(req.project_id, req.query);
    return {};
  });
}

/**
 * `include_costs`: adds `summary.weave.costs` to each call of a chunk that has a summary and
 * priced usage: one price read per chunk, for the models the chunk uses (pricing.ts).
 */
export function costsEnricher(store: ClickHouseStore): (projectId: string) => CallEnricher {
  const costs = new CostsRepository(store);
  return (projectId) => async (rows, calls) => {
    const usages: Map<string, ModelUsage>[] = calls.map((call) => usageOfSummary(call.summary));
    const models = new Set(usages.flatMap((u) => [...u.keys()]));
    if (models.size === 0) return;
    const book = await costs.priceBook(projectId, [...models]);
    calls.forEach((call, i) => {
      const summary = call.summary;
      const row = rows[i];
      if (!isJsonObject(summary) || !row) return;
      const priced = costsOfUsage(usages[i]!, Number(row.started_at), book);
      if (Object.keys(priced).length === 0) return;
      summary.weave = { ...(isJsonObject(summary.weave) ? summary.weave : {}), costs: priced };
    });
  };
}
