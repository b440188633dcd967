import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder } from "../sql.js";
import { resourceKey, withResource } from "./spanResources.js";
import { withIoCopies } from "./ioCopies.js";

/**
 * A row read from `calls` with its attributes' text, its span's resource hash ('' for
 * attributes stored whole), and the inputs and output its attributes may repeat (ioCopies.ts).
 */
export interface RowWithStoredAttributes {
  attributes?: string;
  resource_hash?: string;
  inputs?: string;
  output?: string | null;
}

/** Texts remembered: a hash names one text for good, so the memory only bounds its size. */
const MAX_REMEMBERED_TEXTS = 10_000;

/**
 * Puts a span's resource and scope back into the attributes of the calls read (spanResources.ts),
 * from `span_resources`, whose texts are kept by project and hash once read, and the inputs
 * and output they repeat (ioCopies.ts).
 */
export class StoredAttributes {
  private readonly texts = new Map<string, string>();

  constructor(private readonly store: ClickHouseStore) {}

  /** The rows (of one project), their attributes whole and without `resource_hash`. */
  async complete<R extends RowWithStoredAttributes>(projectId: string, rows: R[]): Promise<R[]> {
    const found = new Map<string, string>();
    const missing = new Set<string>();
    for (const row of rows) {
      const hash = row.resource_hash;
      if (!hash || found.has(hash)) continue;
      const text = this.texts.get(resourceKey(projectId, hash));
      if (text === undefined) missing.add(hash);
      else found.set(hash, text);
    }
    if (missing.size > 0) for (const [hash, text] of await this.read(projectId, [...missing])) found.set(hash, text);
    for (const row of rows) {
      const hash = row.resource_hash;
      delete row.resource_hash;
      if (!hash || row.attributes === undefined) continue;
      const text = found.get(hash);
      if (text === undefined) throw new Error(`span resource ${hash} of project ${projectId} not found`);
      row.attributes = withResource(withIoCopies(row.attributes, row.inputs, row.output), text);
    }
    return rows;
  }

  private async read(projectId: string, hashes: readonly string[]): Promise<Map<string, string>> {
    const pb = new ParamBuilder();
    const rows = await this.store.rows<{ hash: string; text: string }>("calls_span_resources", {
      sql: `SELECT hash, any(text) AS text FROM span_resources WHERE project_id = ${pb.str(projectId)} AND hash IN ${pb.inStrings(hashes)} GROUP BY hash`,
      params: pb.params,
    });
    if (this.texts.size + rows.length > MAX_REMEMBERED_TEXTS) this.texts.clear();
    for (const row of rows) this.texts.set(resourceKey(projectId, row.hash), row.text);
    return new Map(rows.map((row) => [row.hash, row.text]));
  }
}
