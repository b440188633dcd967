import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CostsRepository } from "../../services/store/costs/costsRepository.js";
import { defaultPriceRows, loadDefaultPriceFile } from "../../services/store/costs/defaultPrices.js";
import type { PriceRow } from "../../services/store/costs/priceRows.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { freshStore } from "../support/database.js";

/** The shipped price file, and how the stored defaults follow it. */

describe("defaultPrices.json", () => {
  const file = loadDefaultPriceFile();

  it("names its source and date, and prices the common model families per token in USD", () => {
    expect(file.source).toMatch(/openai\.com.*anthropic\.com.*ai\.google\.dev/);
    expect(file.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const ids = new Set(file.prices.map((p) => p.llm_id));
    for (const model of ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o1", "o3", "o3-mini", "o4-mini", "gpt-3.5-turbo", "claude-3-5-sonnet-20241022", "claude-3-7-sonnet-20250219", "claude-sonnet-4-20250514", "claude-opus-4-20250514", "claude-3-haiku-20240307", "gemini-1.5-pro", "gemini-2.0-flash", "gemini-2.5-pro", "gemini-2.5-flash"]) {
      expect(ids, model).toContain(model);
    }
    for (const p of file.prices) {
      expect(p.prompt_token_cost).toBeLessThan(1e-3);
      expect(p.completion_token_cost).toBeGreaterThanOrEqual(p.prompt_token_cost);
    }
  });

  it("gives stable ids per (model, effective date)", () => {
    const rows = defaultPriceRows(file);
    expect(defaultPriceRows(file)).toEqual(rows);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    expect(rows.every((r) => r.project_id === "" && r.prompt_token_cost_unit === "USD")).toBe(true);
  });
});

describe("syncDefaults", () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = await freshStore();
  });
  afterAll(async () => store.close());

  const base = (id: string, cost: number): PriceRow => ({
    project_id: "", id, llm_id: id, provider_id: "p", prompt_token_cost: cost, completion_token_cost: cost, prompt_token_cost_unit: "USD",
    completion_token_cost_unit: "USD", cache_read_input_token_cost: 0, cache_creation_input_token_cost: 0, effective_date: 0, created_at: 0, created_by: "default",
  });
  const stored = async () =>
    (await store.rows<{ id: string; prompt_token_cost: number }>("t", { sql: "SELECT id, argMax(prompt_token_cost, version) AS prompt_token_cost FROM llm_token_prices WHERE project_id = '' GROUP BY id HAVING argMax(deleted, version) = 0 ORDER BY id", params: {} }));
  const versions = async () => Number((await store.rows<{ n: string }>("t", { sql: "SELECT count() AS n FROM llm_token_prices", params: {} }))[0]!.n);

  it("starts from the file (migration), then writes changed and new rows and tombstones removed ones, idempotently", async () => {
    expect((await stored()).length).toBe(loadDefaultPriceFile().prices.length);
    const migrated = await versions();
    await new CostsRepository(store).syncDefaults();
    expect(await versions()).toBe(migrated);
    let file = [base("m1", 1), base("m2", 2)];
    await new CostsRepository(store, () => file).syncDefaults();
    expect(await stored()).toEqual([{ id: "m1", prompt_token_cost: 1 }, { id: "m2", prompt_token_cost: 2 }]);
    const written = await versions();
    await new CostsRepository(store, () => file).syncDefaults();
    expect(await versions()).toBe(written);
    file = [base("m1", 1.5), base("m3", 3)];
    await new CostsRepository(store, () => file).syncDefaults();
    expect(await stored()).toEqual([{ id: "m1", prompt_token_cost: 1.5 }, { id: "m3", prompt_token_cost: 3 }]);
    expect(await versions()).toBe(written + 3);
  });
});
