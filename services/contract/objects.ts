import { Limit, Offset, ProjectId } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * Versioned objects, their tags and aliases (spec: tracing-api.md, "Objects, refs, digests").
 * What each operation does is written in services/query/objectsRoutes.ts; storage in
 * services/store/objects/.
 *
 * Names:
 * - an object id is 1 to 128 letters, digits, `_`, `.` or `-` (Unicode letters and digits, as
 *   Python's `\w` takes them);
 * - a tag is 1 to 256 characters: words of letters, digits, `_` and `-`, separated by single
 *   spaces (`gold`, `needs review`);
 * - an alias is 1 to 128 characters, not only whitespace, without `/`, `:` or control
 *   characters; `latest` and `v<N>` are reserved (they already name versions in `/obj/read`).
 *   An alias names one version of its object at a time: setting it again moves it.
 */

export const MAX_OBJECT_ID_CHARS = 128;
export const MAX_TAG_CHARS = 256;
export const MAX_ALIAS_CHARS = 128;
/** Most names (tags, aliases) one request may add or remove. */
export const MAX_NAMES_PER_REQUEST = 100;
/** Most versions one `/obj/delete` may name. */
export const MAX_DELETE_DIGESTS = 100;
/** Most values in one `/objs/query` filter list. */
export const MAX_FILTER_VALUES = 1000;

const TAG = "Objects";

export const ObjectId = z
  .string()
  .min(1, "must not be empty")
  .max(MAX_OBJECT_ID_CHARS)
  .regex(/^[\p{L}\p{N}\p{M}\p{Pc}.-]+$/u, "may hold only letters, digits, '_', '.' and '-'")
  .openapi({ example: "my-dataset" });

/** A version as `/obj/read` names it: a digest, `latest`, `v<N>` or an alias. */
export const VersionRef = z.string().min(1).max(256).openapi({ description: "A digest, `latest`, `v<N>` (0-based) or an alias" });

export const TagName = z
  .string()
  .min(1, "must not be empty")
  .max(MAX_TAG_CHARS)
  .regex(/^[\p{L}\p{N}_-]+( [\p{L}\p{N}_-]+)*$/u, "must be words of letters, digits, '_' and '-' separated by single spaces");

export const RESERVED_ALIAS = "latest";
const VERSION_LIKE = /^v\d+$/;

export const AliasName = z
  .string()
  .min(1, "must not be empty")
  .max(MAX_ALIAS_CHARS)
  .refine((s) => !/[/:\p{Cc}]/u.test(s), "must not contain '/', ':' or control characters")
  .refine((s) => s.trim() !== "", "must not be only whitespace")
  .refine((s) => s !== RESERVED_ALIAS && !VERSION_LIKE.test(s), "'latest' and v<N> are reserved: they already name versions");

const ClassName = z.string().min(1).max(256);
const filterList = <T extends z.ZodType>(item: T) => z.array(item).max(MAX_FILTER_VALUES).nullish();

// ---- create -----------------------------------------------------------------------------

export const ObjSchemaForInsert = z
  .object({
    project_id: ProjectId,
    object_id: ObjectId,
    val: z.unknown().refine((v) => v !== undefined, "is required").openapi({ description: "Any JSON value; digested as the Weave clients digest it" }),
    builtin_object_class: ClassName.nullish().openapi({
      description: "Marks a dict value as this builtin class (adds `_type`, `_class_name`, `_bases`, and `name`/`description` when missing)",
    }),
    set_base_object_class: ClassName.nullish().openapi({ description: "Deprecated name of builtin_object_class" }),
    expected_digest: z.string().max(256).nullish().openapi({ description: "When set and different from the value's digest: 400, nothing written" }),
    wb_user_id: z.string().nullish().openapi({ description: "Ignored: the server fills it from the key" }),
  })
  .openapi("ObjSchemaForInsert");
export type ObjSchemaForInsert = z.infer<typeof ObjSchemaForInsert>;

export const ObjCreateReq = z.object({ obj: ObjSchemaForInsert }).openapi("ObjCreateReq");
export const ObjCreateRes = z.object({ digest: z.string(), object_id: z.string() }).openapi("ObjCreateRes");

// ---- the stored object ------------------------------------------------------------------

export const ObjSchema = z
  .object({
    project_id: z.string(),
    object_id: z.string(),
    created_at: z.string(),
    deleted_at: z.string().nullable(),
    digest: z.string(),
    version_index: z.number().int(),
    is_latest: z.number().int().openapi({ description: "1 for the newest live version of the object, else 0" }),
    kind: z.enum(["op", "object"]),
    base_object_class: z.string().nullable(),
    leaf_object_class: z.string().nullable(),
    val: z.unknown().openapi({ description: "The value as created (`{}` when metadata_only)" }),
    wb_user_id: z.string().nullable(),
    size_bytes: z.number().int().nullable().openapi({ description: "With include_storage_size: bytes of the value's JSON" }),
    tags: z.array(z.string()).nullable().openapi({ description: "With include_tags_and_aliases" }),
    aliases: z.array(z.string()).nullable().openapi({ description: "With include_tags_and_aliases; `latest` on the latest version" }),
  })
  .openapi("ObjSchema");
export type ObjSchema = z.infer<typeof ObjSchema>;

// ---- read, query, delete ----------------------------------------------------------------

export const ObjReadReq = z
  .object({
    project_id: ProjectId,
    object_id: ObjectId,
    digest: VersionRef,
    metadata_only: z.boolean().nullish(),
    include_tags_and_aliases: z.boolean().nullish(),
  })
  .openapi("ObjReadReq");
export type ObjReadReq = z.infer<typeof ObjReadReq>;
export const ObjReadRes = z.object({ obj: ObjSchema }).openapi("ObjReadRes");

export const OBJ_SORT_FIELDS = ["object_id", "created_at"] as const;

export const ObjectVersionFilter = z
  .object({
    base_object_classes: filterList(ClassName),
    exclude_base_object_classes: filterList(ClassName),
    leaf_object_classes: filterList(ClassName),
    object_ids: filterList(ObjectId),
    is_op: z.boolean().nullish().openapi({ description: "true: only ops; false: only non-ops" }),
    latest_only: z.boolean().nullish(),
    tags: filterList(TagName).openapi({ description: "Versions carrying any of these tags" }),
    aliases: filterList(z.string().min(1).max(MAX_ALIAS_CHARS)).openapi({ description: "Versions any of these aliases names (`latest` included)" }),
  })
  .openapi("ObjectVersionFilter");
export type ObjectVersionFilter = z.infer<typeof ObjectVersionFilter>;

export const ObjQueryReq = z
  .object({
    project_id: ProjectId,
    filter: ObjectVersionFilter.nullish(),
    limit: Limit,
    offset: Offset,
    sort_by: z
      .array(z.object({ field: z.enum(OBJ_SORT_FIELDS), direction: z.enum(["asc", "desc"]) }))
      .max(4)
      .nullish()
      .openapi({ description: "Default created_at asc; version_index asc breaks ties" }),
    metadata_only: z.boolean().nullish(),
    include_storage_size: z.boolean().nullish(),
    include_tags_and_aliases: z.boolean().nullish(),
  })
  .openapi("ObjQueryReq");
export type ObjQueryReq = z.infer<typeof ObjQueryReq>;
export const ObjQueryRes = z.object({ objs: z.array(ObjSchema) }).openapi("ObjQueryRes");

export const ObjDeleteReq = z
  .object({
    project_id: ProjectId,
    object_id: ObjectId,
    digests: z.array(VersionRef).max(MAX_DELETE_DIGESTS).nullish().openapi({ description: "Versions to delete (digest, latest, v<N> or alias); all when absent" }),
  })
  .openapi("ObjDeleteReq");
export type ObjDeleteReq = z.infer<typeof ObjDeleteReq>;
export const ObjDeleteRes = z.object({ num_deleted: z.number().int() }).openapi("ObjDeleteRes");

// ---- tags and aliases -------------------------------------------------------------------

const names = <T extends z.ZodType>(item: T) => z.array(item).min(1).max(MAX_NAMES_PER_REQUEST);

export const ObjVersionParams = z.object({ object_id: ObjectId, digest: VersionRef });
export const ObjParams = z.object({ object_id: ObjectId });

export const ObjTagsBody = z.object({ project_id: ProjectId, tags: names(TagName) }).openapi("ObjTagsBody");
export const ObjSetAliasesBody = z.object({ project_id: ProjectId, digest: VersionRef, aliases: names(AliasName) }).openapi("ObjSetAliasesBody");
export const ObjRemoveAliasesBody = z.object({ project_id: ProjectId, aliases: names(AliasName) }).openapi("ObjRemoveAliasesBody");
export const EmptyRes = z.object({}).openapi("ObjEmptyRes");

export const ProjectQuery = z.object({ project_id: ProjectId });
export const TagsListRes = z.object({ tags: z.array(z.string()) }).openapi("TagsListRes");
export const AliasesListRes = z.object({ aliases: z.array(z.string()) }).openapi("AliasesListRes");

// ---- operations -------------------------------------------------------------------------

export const objCreateOp = operation({
  id: "obj_create", method: "post", path: "/obj/create", summary: "Create an object", tag: TAG,
  body: ObjCreateReq, keepBodyText: true, role: "writer", scope: { kind: "projects", of: ({ body }) => [body.obj.project_id] }, response: ObjCreateRes,
});
export const objReadOp = operation({ id: "obj_read", method: "post", path: "/obj/read", summary: "Read an object", tag: TAG, body: ObjReadReq, role: "viewer", scope: BODY_PROJECT, response: ObjReadRes });
export const objsQueryOp = operation({ id: "objs_query", method: "post", path: "/objs/query", summary: "Query objects", tag: TAG, body: ObjQueryReq, role: "viewer", scope: BODY_PROJECT, response: ObjQueryRes });
export const objDeleteOp = operation({ id: "obj_delete", method: "post", path: "/obj/delete", summary: "Delete an object", tag: TAG, body: ObjDeleteReq, role: "admin", scope: BODY_PROJECT, response: ObjDeleteRes, retries: "recorded" });
export const objAddTagsOp = operation({
  id: "obj_add_tags", method: "put", path: "/objs/{object_id}/versions/{digest}/tags", summary: "Add tags to an object version", tag: TAG,
  params: ObjVersionParams, body: ObjTagsBody, role: "writer", scope: BODY_PROJECT, response: EmptyRes,
});
export const objRemoveTagsOp = operation({
  id: "obj_remove_tags", method: "post", path: "/objs/{object_id}/versions/{digest}/tags/remove", summary: "Remove tags from an object version", tag: TAG,
  params: ObjVersionParams, body: ObjTagsBody, role: "writer", scope: BODY_PROJECT, response: EmptyRes,
});
export const objSetAliasesOp = operation({
  id: "obj_set_aliases", method: "put", path: "/objs/{object_id}/aliases", summary: "Set an object alias", tag: TAG,
  params: ObjParams, body: ObjSetAliasesBody, role: "writer", scope: BODY_PROJECT, response: EmptyRes,
});
export const objRemoveAliasesOp = operation({
  id: "obj_remove_aliases", method: "post", path: "/objs/{object_id}/aliases/remove", summary: "Remove an object alias", tag: TAG,
  params: ObjParams, body: ObjRemoveAliasesBody, role: "writer", scope: BODY_PROJECT, response: EmptyRes,
});
export const tagsListOp = operation({
  id: "tags_list", method: "get", path: "/tags", summary: "List tags", tag: TAG,
  query: ProjectQuery, role: "viewer", scope: { kind: "projects", of: ({ query }) => [query.project_id] }, response: TagsListRes,
});
export const aliasesListOp = operation({
  id: "aliases_list", method: "get", path: "/aliases", summary: "List aliases", tag: TAG,
  query: ProjectQuery, role: "viewer", scope: { kind: "projects", of: ({ query }) => [query.project_id] }, response: AliasesListRes,
});
