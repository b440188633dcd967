import type { Response } from "express";
import {
  aliasesListOp, objAddTagsOp, objCreateOp, objDeleteOp, objReadOp, objRemoveAliasesOp, objRemoveTagsOp, objSetAliasesOp, objsQueryOp, tagsListOp,
  type ObjQueryReq,
} from "../contract/objects.js";
import { ClientError, NotFoundError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import { fromPlainJson } from "../losslessJson.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { objectJsonText } from "../store/objects/objectRows.js";
import { ObjectsRepository } from "../store/objects/objectsRepository.js";
import type { VersionSelection } from "../store/objects/objectsQuery.js";
import { losslessMember, prepareObject } from "../store/objects/objectValue.js";
import type { Clock } from "../times.js";

export interface ObjectsDeps {
  readonly store: ClickHouseStore;
  /** Server time (tests pass their own); defaults to the system clock. */
  readonly clock?: Clock;
}

/**
 * `/obj/*`, `/objs/*`, `/tags`, `/aliases` (contract: contract/objects.ts, storage:
 * store/objects/). Writes go straight to ClickHouse: each answer is visible to the next
 * request. `wb_user_id` is always the key's user.
 *
 * Values are digested and stored from the request text read losslessly (`1.0` stays a float,
 * big integers exact), and reads answer the stored text verbatim, so a client that digests
 * what it read gets the digest it was given.
 */
export function mountObjectRoutes(api: HttpApi, deps: ObjectsDeps): void {
  const repo = new ObjectsRepository(deps.store, deps.clock);

  api.mount(objCreateOp, async ({ body: { obj } }, ctx) => {
    const val = ctx.bodyText === undefined ? fromPlainJson(obj.val) : losslessMember(ctx.bodyText, ["obj", "val"]) ?? null;
    const prepared = prepareObject(val, obj.builtin_object_class ?? obj.set_base_object_class ?? null);
    if (obj.expected_digest && obj.expected_digest !== prepared.digest) {
      throw new ClientError(400, `expected_digest ${obj.expected_digest} differs from the digest of the value sent, ${prepared.digest}; nothing was written`);
    }
    await repo.create({ projectId: obj.project_id, objectId: obj.object_id, prepared, wbUserId: ctx.principal.username });
    return { digest: prepared.digest, object_id: obj.object_id };
  });

  api.mount(objReadOp, async ({ body: req }, ctx) => {
    const version = await repo.read(req.project_id, req.object_id, req.digest, {
      metadataOnly: req.metadata_only, includeTagsAndAliases: req.include_tags_and_aliases,
    });
    sendJson(ctx.res, `{"obj":${objectJsonText(version)}}`);
  });

  api.mount(objsQueryOp, async ({ body: req }, ctx) => {
    const versions = await repo.query(selectionOf(req), {
      metadataOnly: req.metadata_only, includeStorageSize: req.include_storage_size, includeTagsAndAliases: req.include_tags_and_aliases,
    });
    sendJson(ctx.res, `{"objs":[${versions.map(objectJsonText).join(",")}]}`);
  });

  api.mount(objDeleteOp, async ({ body: req }) => {
    return { num_deleted: await repo.delete(req.project_id, req.object_id, req.digests ?? null) };
  });

  api.mount(objAddTagsOp, async ({ params, body }) => {
    const version = await repo.resolve(body.project_id, params.object_id, params.digest);
    await repo.labels.addTags(body.project_id, params.object_id, version.digest, body.tags);
    return {};
  });

  api.mount(objRemoveTagsOp, async ({ params, body }) => {
    const version = await repo.resolve(body.project_id, params.object_id, params.digest).catch(noVersion);
    if (version) await repo.labels.removeTags(body.project_id, params.object_id, version.digest, body.tags);
    return {};
  });

  api.mount(objSetAliasesOp, async ({ params, body }) => {
    const version = await repo.resolve(body.project_id, params.object_id, body.digest);
    await repo.labels.setAliases(body.project_id, params.object_id, version.digest, body.aliases);
    return {};
  });

  api.mount(objRemoveAliasesOp, async ({ params, body }) => {
    await repo.labels.removeAliases(body.project_id, params.object_id, body.aliases);
    return {};
  });

  api.mount(tagsListOp, async ({ query }) => ({ tags: await repo.labels.tagNames(query.project_id) }));

  api.mount(aliasesListOp, async ({ query }) => ({ aliases: await repo.aliasNames(query.project_id) }));
}

/** Removing tags from a version that does not exist (or was deleted, which removed them) removes nothing. */
function noVersion(err: unknown): null {
  if (err instanceof NotFoundError) return null;
  throw err;
}

function selectionOf(req: ObjQueryReq): VersionSelection {
  const f = req.filter ?? {};
  return {
    projectId: req.project_id,
    objectIds: f.object_ids,
    latestOnly: f.latest_only,
    isOp: f.is_op,
    baseClasses: f.base_object_classes,
    excludeBaseClasses: f.exclude_base_object_classes,
    leafClasses: f.leaf_object_classes,
    tags: f.tags,
    aliases: f.aliases,
    sortBy: req.sort_by,
    limit: req.limit,
    offset: req.offset,
  };
}

/** Answers JSON text built around stored values (see objectJsonText). */
function sendJson(res: Response, text: string): void {
  res.status(200).type("application/json").send(text);
}
