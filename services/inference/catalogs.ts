import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import { Catalog, CATALOG_NAMES, CATALOG_OPERATIONS, type CatalogName } from "../contract/inference.js";
import type { HttpApi } from "../http/app.js";
import { isJsonObject } from "../json.js";
import { errorText } from "../errors.js";

/**
 * The inference information catalogs: JSON files shipped beside this module (written by us;
 * each says the date of its facts and the public pages they come from), replaced by what a
 * configured upstream URL answers once it answers, kept when it fails.
 */
export function shippedCatalog(name: CatalogName): Catalog {
  const text = readFileSync(new URL(`./catalogs/${name}.json`, import.meta.url), "utf8");
  return Catalog.parse(JSON.parse(text));
}

const today = (nowMs: number) => new Date(nowMs).toISOString().slice(0, 10);

/**
 * An upstream's answer as a catalog: one in our shape is taken as it is; any other JSON
 * object or array (a vendor's own list) becomes the data of a catalog dated today.
 */
export function catalogFromUpstream(name: CatalogName, url: string, body: unknown, nowMs = Date.now()): Catalog | null {
  const ours = Catalog.safeParse(body);
  if (ours.success) return ours.data;
  const rows = Array.isArray(body) ? body : isJsonObject(body) && Array.isArray(body.data) ? body.data : null;
  if (rows === null || !rows.every(isJsonObject)) return null;
  return { object: "catalog", name, as_of: today(nowMs), sources: [url], data: rows };
}

export interface CatalogSettings {
  readonly urls: Partial<Record<CatalogName, string>>;
  readonly refreshMs: number;
  readonly timeoutMs?: number;
}

export class Catalogs {
  private readonly current = new Map<CatalogName, Catalog>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly settings: CatalogSettings,
    private readonly log: Logger,
  ) {
    for (const name of CATALOG_NAMES) this.current.set(name, shippedCatalog(name));
  }

  get(name: CatalogName): Catalog {
    return this.current.get(name)!;
  }

  /** Refreshes now, then every `refreshMs` (the timer does not keep the process alive). No URLs: nothing to do. */
  start(): void {
    if (Object.keys(this.settings.urls).length === 0 || this.timer) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.settings.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Fetches every configured catalog; one that fails keeps what it had. Resolves with the names refreshed. */
  async refresh(): Promise<CatalogName[]> {
    const names = CATALOG_NAMES.filter((name) => this.settings.urls[name]);
    const results = await Promise.all(names.map(async (name) => ((await this.refreshOne(name, this.settings.urls[name]!)) ? [name] : [])));
    return results.flat();
  }

  private async refreshOne(name: CatalogName, url: string): Promise<boolean> {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(this.settings.timeoutMs ?? 10_000), headers: { accept: "application/json" } });
      if (res.status !== 200) throw new Error(`answered ${res.status}`);
      const catalog = catalogFromUpstream(name, url, await res.json());
      if (!catalog) throw new Error("not a catalog, nor a JSON list of objects");
      this.current.set(name, catalog);
      return true;
    } catch (err) {
      this.log.warn({ catalog: name, url, reason: errorText(err) }, "could not refresh an inference catalog; keeping the one it had");
      return false;
    }
  }
}

export function mountCatalogRoutes(api: HttpApi, catalogs: Catalogs): void {
  for (const name of CATALOG_NAMES) api.mount(CATALOG_OPERATIONS[name], async () => catalogs.get(name));
}
