import { NotFoundError } from "../../errors.js";
import { MonotonicClock, type Clock } from "../../times.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { idChunks } from "../sql.js";
import { ObjectLabels, sortedNames, versionKey, type ObjectLabelSet } from "./objectLabels.js";
import { newObjectRow, toObjectMeta, type ObjectMeta, type ObjectMetaRow, type ObjectVersion } from "./objectRows.js";
import { anyLiveObjectQuery, deleteVersionsQuery, valuesQuery, versionsQuery, versionStateQuery, type VersionSelection } from "./objectsQuery.js";
import { fromPlainJson, type PlainJson } from "../../losslessJson.js";
import { prepareObject, type PreparedObject } from "./objectValue.js";
import { resolveVersion, type ObjectVersions } from "./resolve.js";

export interface NewObject {
  readonly projectId: string;
  readonly objectId: string;
  readonly prepared: PreparedObject;
  readonly wbUserId: string;
}

export interface ReadOptions {
  readonly metadataOnly?: boolean | null;
  readonly includeTagsAndAliases?: boolean | null;
  readonly includeStorageSize?: boolean | null;
}

/** A version named by its object and digest, as refs name it. */
export interface VersionRef {
  readonly objectId: string;
  readonly digest: string;
}

/** A live version's value, as `readByRefs` answers it. */
export interface StoredValue {
  readonly objectId: string;
  readonly digest: string;
  readonly kind: "op" | "object";
  /** The value's JSON text as created (see objectRows.ts objectJsonText for why text). */
  readonly valText: string;
}

const EMPTY_VALUE = "{}";

/**
 * Versioned objects (tables in schema.ts, SQL in objectsQuery.ts). Writes go straight to
 * ClickHouse: objects are low-volume and their API promises read-your-writes.
 */
export class ObjectsRepository {
  readonly labels: ObjectLabels;

  constructor(
    private readonly store: ClickHouseStore,
    private readonly clock: Clock = new MonotonicClock(),
  ) {
    this.labels = new ObjectLabels(store, clock);
  }

  /**
   * Creates a version; the same value again writes nothing. A deleted version created again
   * comes back with its first creation time, so its version number is the one it had.
   */
  async create(obj: NewObject): Promise<void> {
    const [state] = await this.store.rows<{ created_at: string; deleted_at: string; version: string }>(
      "object_state",
      versionStateQuery(obj.projectId, obj.objectId, obj.prepared.digest),
    );
    if (state && Number(state.deleted_at) === 0) return;
    const now = this.clock.nowMicros();
    const createdAt = state ? Number(state.created_at) : now;
    const version = state ? Math.max(now, Number(state.version) + 1) : now;
    await this.store.insert("object_create", "objects", [newObjectRow({ ...obj, createdAt, version })]);
  }

  /** Creates a version of a value the service made itself (already plain JSON); answers its digest. */
  async createValue(projectId: string, objectId: string, val: PlainJson, wbUserId: string): Promise<string> {
    const prepared = prepareObject(fromPlainJson(val), null);
    await this.create({ projectId, objectId, prepared, wbUserId });
    return prepared.digest;
  }

  /** One live version named by a digest, `latest`, `v<N>` or an alias; NotFoundError otherwise. */
  async read(projectId: string, objectId: string, ref: string, options: ReadOptions = {}): Promise<ObjectVersion> {
    const object = await this.versionsOf(projectId, objectId);
    const resolved = resolveVersion(object, ref);
    const meta = { ...resolved, size_bytes: options.includeStorageSize ? resolved.size_bytes : null };
    if (options.includeTagsAndAliases) attachLabels([meta], new Map([[objectId, object.labels]]));
    const [version] = await this.withValues(projectId, [meta], options.metadataOnly === true);
    return version!;
  }

  /** `/objs/query`: live versions, filtered, sorted and paged in ClickHouse, then their values. */
  async query(selection: VersionSelection, options: ReadOptions = {}): Promise<ObjectVersion[]> {
    const metas = await this.metas(selection, options.includeStorageSize === true);
    if (options.includeTagsAndAliases) attachLabels(metas, await this.labels.ofObjects(selection.projectId, metas.map((m) => m.object_id)));
    return this.withValues(selection.projectId, metas, options.metadataOnly === true);
  }

  /**
   * Deletes the named versions (every live one when `refs` is null), with their tags and
   * aliases; all or nothing: a ref that names no live version → NotFoundError, nothing deleted.
   * Answers how many versions were deleted.
   */
  async delete(projectId: string, objectId: string, refs: readonly string[] | null): Promise<number> {
    const object = await this.versionsOf(projectId, objectId);
    const digests = refs === null ? liveDigests(object) : [...new Set(refs.map((ref) => resolveVersion(object, ref).digest))];
    if (digests.length === 0) throw new NotFoundError(`object ${JSON.stringify(objectId)} has no live versions to delete in project ${projectId}`);
    await this.store.command("object_delete", deleteVersionsQuery(projectId, objectId, digests, this.clock.nowMicros()));
    await this.labels.removeAllOf(projectId, objectId, digests);
    return digests.length;
  }

  /** The live version a ref names (for tags and aliases); NotFoundError otherwise. */
  async resolve(projectId: string, objectId: string, ref: string): Promise<ObjectMeta> {
    return resolveVersion(await this.versionsOf(projectId, objectId), ref);
  }

  /** Sorted names of the project's live aliases, `latest` among them when it has a live object. */
  async aliasNames(projectId: string): Promise<string[]> {
    const [names, [live]] = await Promise.all([
      this.labels.aliasNames(projectId),
      this.store.rows<{ n: string }>("objects_any_live", anyLiveObjectQuery(projectId)),
    ]);
    return Number(live?.n ?? 0) > 0 ? sortedNames([...names, "latest"]) : names;
  }

  /**
   * The values of live versions named by (object id, digest), in the order asked; null for a
   * version that does not exist or was deleted. Reads only the named rows, in chunks, so that
   * `/refs/read_batch` can resolve many refs at once.
   */
  async readByRefs(projectId: string, refs: readonly VersionRef[]): Promise<(StoredValue | null)[]> {
    const found = await this.values(projectId, refs);
    return refs.map((ref) => {
      const row = found.get(versionKey(ref.objectId, ref.digest));
      return row && Number(row.deleted_at) === 0 ? { objectId: ref.objectId, digest: ref.digest, kind: row.kind === "op" ? "op" : "object", valText: row.val } : null;
    });
  }

  /** Every version of one object, deleted ones included (ranked), and its live labels. */
  private async versionsOf(projectId: string, objectId: string): Promise<ObjectVersions> {
    const [metas, labels] = await Promise.all([
      this.metas({ projectId, objectIds: [objectId], includeDeleted: true }, true),
      this.labels.ofObjects(projectId, [objectId]),
    ]);
    return { projectId, objectId, versions: metas, labels: labels.get(objectId) ?? { tags: new Map(), aliases: new Map() } };
  }

  private async metas(selection: VersionSelection, includeStorageSize: boolean): Promise<ObjectMeta[]> {
    const rows = await this.store.rows<ObjectMetaRow>("objects_versions", versionsQuery(selection));
    return rows.map((row) => toObjectMeta(row, includeStorageSize));
  }

  private async withValues(projectId: string, metas: readonly ObjectMeta[], metadataOnly: boolean): Promise<ObjectVersion[]> {
    if (metadataOnly) return metas.map((meta) => ({ meta, valText: EMPTY_VALUE }));
    const found = await this.values(projectId, metas.map((m) => ({ objectId: m.object_id, digest: m.digest })));
    return metas.map((meta) => ({ meta, valText: found.get(versionKey(meta.object_id, meta.digest))?.val ?? "null" }));
  }

  private async values(projectId: string, refs: readonly VersionRef[]): Promise<Map<string, ValueRow>> {
    const found = new Map<string, ValueRow>();
    const wanted = new Set(refs.map((r) => versionKey(r.objectId, r.digest)));
    for (const digests of idChunks([...new Set(refs.map((r) => r.digest))])) {
      const inChunk = new Set(digests);
      const objectIds = [...new Set(refs.filter((r) => inChunk.has(r.digest)).map((r) => r.objectId))];
      const rows = await this.store.rows<ValueRow>("objects_values", valuesQuery(projectId, objectIds, digests));
      for (const row of rows) {
        const key = versionKey(row.object_id, row.digest);
        if (wanted.has(key)) found.set(key, row);
      }
    }
    return found;
  }
}

interface ValueRow {
  object_id: string;
  digest: string;
  kind: string;
  deleted_at: string;
  val: string;
}

function liveDigests(object: ObjectVersions): string[] {
  return object.versions.filter((v) => v.deleted_at === null).map((v) => v.digest);
}

/** Sets `tags` and `aliases` of each version (sorted; `latest` on the latest one). */
function attachLabels(metas: ObjectMeta[], labels: ReadonlyMap<string, ObjectLabelSet>): void {
  for (const meta of metas) {
    const set = labels.get(meta.object_id);
    meta.tags = sortedNames(set?.tags.get(meta.digest) ?? []);
    const aliases = [...(set?.aliases ?? [])].filter(([, digest]) => digest === meta.digest).map(([alias]) => alias);
    meta.aliases = sortedNames(meta.is_latest === 1 ? [...aliases, "latest"] : aliases);
  }
}
