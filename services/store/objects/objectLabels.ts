import { compareCodePoints } from "../../digests.js";
import { MonotonicClock, type Clock } from "../../times.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { idChunks } from "../sql.js";
import { labelNamesQuery, labelsOfObjectsQuery, labelVersionsQuery, removeLabelsQuery, type LabelRemoval, type LabelTable } from "./labelsQuery.js";

/** The live tags and aliases of one object: tags per digest, and the digest each alias names. */
export interface ObjectLabelSet {
  readonly tags: Map<string, string[]>;
  readonly aliases: Map<string, string>;
}

/** A key for (object id, digest) pairs. */
export const versionKey = (objectId: string, digest: string): string => JSON.stringify([objectId, digest]);

/** Names sorted as Python sorts `str` (by code point). */
export const sortedNames = (names: Iterable<string>): string[] => [...new Set(names)].sort(compareCodePoints);

/**
 * Tags and aliases of object versions. The caller checks that the versions exist; this class
 * only keeps the two tables. A new row always outranks the row it replaces (a removed tag
 * added again, an alias moved), whatever the writers' clocks.
 */
export class ObjectLabels {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  async addTags(projectId: string, objectId: string, digest: string, tags: readonly string[]): Promise<void> {
    const versions = await this.nextVersions("object_tags", projectId, objectId, tags, digest);
    const now = this.clock.nowMicros();
    const rows = sortedNames(tags).map((tag) => ({ project_id: projectId, object_id: objectId, digest, tag, deleted: 0, created_at: now, version: versions(tag) }));
    await this.store.insert("object_tags_add", "object_tags", rows);
  }

  async removeTags(projectId: string, objectId: string, digest: string, tags: readonly string[]): Promise<void> {
    await this.remove("object_tags", { projectId, objectId, digests: [digest], names: tags });
  }

  /** Points each alias at `digest` (moving it from the version it named before). */
  async setAliases(projectId: string, objectId: string, digest: string, aliases: readonly string[]): Promise<void> {
    const versions = await this.nextVersions("object_aliases", projectId, objectId, aliases);
    const now = this.clock.nowMicros();
    const rows = sortedNames(aliases).map((alias) => ({ project_id: projectId, object_id: objectId, alias, digest, deleted: 0, created_at: now, version: versions(alias) }));
    await this.store.insert("object_aliases_set", "object_aliases", rows);
  }

  async removeAliases(projectId: string, objectId: string, aliases: readonly string[]): Promise<void> {
    await this.remove("object_aliases", { projectId, objectId, names: aliases });
  }

  /** Removes every tag and alias of these versions (they were deleted). */
  async removeAllOf(projectId: string, objectId: string, digests: readonly string[]): Promise<void> {
    await Promise.all([this.remove("object_tags", { projectId, objectId, digests }), this.remove("object_aliases", { projectId, objectId, digests })]);
  }

  /** The live labels of some objects, by object id. */
  async ofObjects(projectId: string, objectIds: readonly string[]): Promise<Map<string, ObjectLabelSet>> {
    const out = new Map<string, ObjectLabelSet>();
    for (const chunk of idChunks([...new Set(objectIds)])) {
      const rows = await this.store.rows<{ kind: string; object_id: string; digest: string; name: string }>("object_labels_read", labelsOfObjectsQuery(projectId, chunk));
      for (const row of rows) {
        let set = out.get(row.object_id);
        if (!set) out.set(row.object_id, (set = { tags: new Map(), aliases: new Map() }));
        if (row.kind === "alias") set.aliases.set(row.name, row.digest);
        else set.tags.set(row.digest, [...(set.tags.get(row.digest) ?? []), row.name]);
      }
    }
    return out;
  }

  async tagNames(projectId: string): Promise<string[]> {
    return this.names("object_tags", projectId);
  }

  async aliasNames(projectId: string): Promise<string[]> {
    return this.names("object_aliases", projectId);
  }

  private async names(table: LabelTable, projectId: string): Promise<string[]> {
    const rows = await this.store.rows<{ name: string }>(`${table}_names`, labelNamesQuery(table, projectId));
    return sortedNames(rows.map((r) => r.name));
  }

  private async remove(table: LabelTable, removal: LabelRemoval): Promise<void> {
    await this.store.command(`${table}_remove`, removeLabelsQuery(table, removal, this.clock.nowMicros()));
  }

  /** The version each named label's next row takes: above its current row (if any) and not below the clock. */
  private async nextVersions(table: LabelTable, projectId: string, objectId: string, names: readonly string[], digest?: string): Promise<(name: string) => number> {
    const rows = await this.store.rows<{ name: string; version: string }>(`${table}_versions`, labelVersionsQuery(table, projectId, objectId, names, digest));
    const current = new Map(rows.map((r) => [r.name, Number(r.version)]));
    const now = this.clock.nowMicros();
    return (name) => Math.max(now, (current.get(name) ?? 0) + 1);
  }
}
