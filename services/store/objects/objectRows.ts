import type { ObjSchema } from "../../contract/objects.js";
import { microsToIso } from "../../times.js";
import type { PreparedObject } from "./objectValue.js";

/** One `objects` row as it is inserted (see schema.ts). */
export interface ObjectRow {
  project_id: string;
  object_id: string;
  digest: string;
  kind: string;
  base_object_class: string;
  leaf_object_class: string;
  val: string;
  size_bytes: number;
  wb_user_id: string;
  created_at: number;
  deleted_at: number;
  version: number;
}

/** Columns of an `objects` row in table order (INSERT … SELECT). */
export const OBJECT_COLUMNS = [
  "project_id", "object_id", "digest", "kind", "base_object_class", "leaf_object_class", "val", "size_bytes", "wb_user_id", "created_at",
  "deleted_at", "version",
] as const;

export interface NewObjectVersion {
  readonly projectId: string;
  readonly objectId: string;
  readonly prepared: PreparedObject;
  readonly wbUserId: string;
  readonly createdAt: number;
  readonly version: number;
}

export function newObjectRow(v: NewObjectVersion): ObjectRow {
  return {
    project_id: v.projectId,
    object_id: v.objectId,
    digest: v.prepared.digest,
    kind: v.prepared.kind,
    base_object_class: v.prepared.baseObjectClass ?? "",
    leaf_object_class: v.prepared.leafObjectClass ?? "",
    val: v.prepared.valText,
    size_bytes: v.prepared.sizeBytes,
    wb_user_id: v.wbUserId,
    created_at: v.createdAt,
    deleted_at: 0,
    version: v.version,
  };
}

/** A version's metadata as the version query reads it (64-bit integers arrive as strings). */
export interface ObjectMetaRow {
  project_id: string;
  object_id: string;
  digest: string;
  kind: string;
  base_object_class: string;
  leaf_object_class: string;
  size_bytes: string | number;
  wb_user_id: string;
  created_at: string | number;
  deleted_at: string | number;
  version_index: number;
  is_latest: number;
}

/** A version's fields, `val` aside (it travels as JSON text). */
export type ObjectMeta = Omit<ObjSchema, "val">;

/** One version of an object: its fields and its value's JSON text. */
export interface ObjectVersion {
  readonly meta: ObjectMeta;
  readonly valText: string;
}

export function toObjectMeta(row: ObjectMetaRow, includeStorageSize: boolean): ObjectMeta {
  const deletedAt = Number(row.deleted_at);
  return {
    project_id: row.project_id,
    object_id: row.object_id,
    created_at: microsToIso(Number(row.created_at)),
    deleted_at: deletedAt === 0 ? null : microsToIso(deletedAt),
    digest: row.digest,
    version_index: Number(row.version_index),
    is_latest: Number(row.is_latest),
    kind: row.kind === "op" ? "op" : "object",
    base_object_class: row.base_object_class === "" ? null : row.base_object_class,
    leaf_object_class: row.leaf_object_class === "" ? null : row.leaf_object_class,
    wb_user_id: row.wb_user_id === "" ? null : row.wb_user_id,
    size_bytes: includeStorageSize ? Number(row.size_bytes) : null,
    tags: null,
    aliases: null,
  };
}

/**
 * The version as JSON text in the ObjSchema field order, with the stored value's text put in
 * verbatim: going through a JS number would turn `1.0` into `1` (another digest for a client
 * that digests what it read) and round big integers.
 */
export function objectJsonText(version: ObjectVersion): string {
  const fields: string[] = [];
  for (const [key, value] of Object.entries(version.meta)) {
    fields.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
    if (key === "leaf_object_class") fields.push(`"val":${version.valText}`);
  }
  return `{${fields.join(",")}}`;
}
