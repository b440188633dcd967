import type { Query } from "../../contract/queryExpr.js";
import { uuidv7 } from "../../ids.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { costQuery, defaultPricesQuery, pricesForModelsQuery, type CostQuerySpec } from "./costsQuery.js";
import { defaultPriceRows } from "./defaultPrices.js";
import { PRICE_COLUMNS, priceRowFromJson, type PriceRow, type PriceRowJson, type StoredPriceRow } from "./priceRows.js";
import { PriceBook } from "./pricing.js";
import { PRICES_TABLE } from "./schema.js";

/** A new project price, as `/cost/create` gives it (effective_date in µs). */
export type NewPrice = Omit<PriceRow, "project_id" | "id" | "created_at" | "created_by">;

type CurrentRowJson = PriceRowJson & { version: string | number };

const toStored = (row: PriceRow, version: number, deleted: 0 | 1): StoredPriceRow => ({ ...row, deleted, version });

/**
 * Prices in ClickHouse, written directly by the query service (not through the queue), so
 * a price is readable as soon as `/cost/create` answers.
 */
export class CostsRepository {
  private lastVersion = 0;
  private defaultsSynced: Promise<void> | null = null;

  constructor(private readonly store: ClickHouseStore, private readonly defaults: () => PriceRow[] = () => defaultPriceRows()) {}

  /** Versions from a µs clock that never repeats or goes back within this process. */
  private nextVersion(atLeast = 0): number {
    this.lastVersion = Math.max(Date.now() * 1000, this.lastVersion + 1, atLeast);
    return this.lastVersion;
  }

  async create(projectId: string, prices: readonly NewPrice[], createdBy: string): Promise<[string, string][]> {
    const createdAt = Date.now() * 1000;
    const rows: StoredPriceRow[] = prices.map((p) =>
      toStored({ ...p, project_id: projectId, id: uuidv7(), created_at: createdAt, created_by: createdBy }, this.nextVersion(), 0),
    );
    await this.store.insert("costs_create", PRICES_TABLE, rows);
    return rows.map((r) => [r.llm_id, r.id]);
  }

  async query(spec: CostQuerySpec): Promise<PriceRow[]> {
    const rows = await this.store.rows<CurrentRowJson>("costs_query", costQuery(spec));
    return rows.map(priceRowFromJson);
  }

  /** Tombstones the project's prices that `query` matches; returns how many. */
  async purge(projectId: string, query: Query): Promise<number> {
    const rows = await this.store.rows<CurrentRowJson>("costs_purge_select", costQuery({ projectId, query }));
    if (rows.length === 0) return 0;
    const tombstones = rows.map((r) => toStored(priceRowFromJson(r), this.nextVersion(Number(r.version) + 1), 1));
    await this.store.insert("costs_purge", PRICES_TABLE, tombstones);
    return tombstones.length;
  }

  /** The prices a project can use for these models, project and default, as a PriceBook. */
  async priceBook(projectId: string, llmIds: readonly string[]): Promise<PriceBook> {
    if (llmIds.length === 0) return new PriceBook(projectId, []);
    await this.syncDefaults();
    const rows = await this.store.rows<CurrentRowJson>("costs_prices_for_models", pricesForModelsQuery(projectId, llmIds));
    return new PriceBook(projectId, rows.map(priceRowFromJson));
  }

  /**
   * Brings the stored defaults in line with the shipped file, once per repository: rows new
   * or changed in the file are written with a newer version, rows gone from it tombstoned.
   * Idempotent, so several processes may run it at once. A failure is retried next time.
   */
  syncDefaults(): Promise<void> {
    this.defaultsSynced ??= this.writeDefaults().catch((err: unknown) => {
      this.defaultsSynced = null;
      throw err;
    });
    return this.defaultsSynced;
  }

  private async writeDefaults(): Promise<void> {
    const stored = new Map<string, { row: PriceRow; version: number }>();
    for (const r of await this.store.rows<CurrentRowJson>("costs_defaults_read", defaultPricesQuery())) {
      stored.set(r.id, { row: priceRowFromJson(r), version: Number(r.version) });
    }
    const wanted = this.defaults();
    const writes: StoredPriceRow[] = [];
    for (const row of wanted) {
      const current = stored.get(row.id);
      if (current && PRICE_COLUMNS.every((c) => current.row[c] === row[c])) continue;
      writes.push(toStored(row, this.nextVersion((current?.version ?? 0) + 1), 0));
    }
    const keep = new Set(wanted.map((r) => r.id));
    for (const { row, version } of stored.values()) {
      if (!keep.has(row.id)) writes.push(toStored(row, this.nextVersion(version + 1), 1));
    }
    if (writes.length > 0) await this.store.insert("costs_defaults_sync", PRICES_TABLE, writes);
  }
}
