import type { Response } from "express";
import { fileContentOp, fileCreateOp, filesContentAlias, filesCreateAlias, filesQueryStatsOp, filesStatsAlias, imageCreateOp, UploadFields } from "../contract/files.js";
import type { ReachedProject } from "../contract/operation.js";
import { objectDigest } from "../digests.js";
import { ClientError, NotFoundError, ValidationError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import { closeAfterAnswer } from "../http/lingeringClose.js";
import { readSingleFileForm } from "../http/multipart.js";
import type { RequestContext } from "../http/operation.js";
import { fromPlainJson, type PlainJson } from "../losslessJson.js";
import { formatRef } from "../refs.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { FilesRepository, type StagedUpload } from "../store/files/filesRepository.js";
import type { StoredFile } from "../store/files/fileRows.js";
import { IMAGE_FILE_NAMES, screenImage, type ImageFormat } from "./imageFormat.js";

/**
 * Stores an object version through the objects resource and answers its digest. The image
 * object that /image/create's ref names is stored through it; without one (a build without
 * the objects resource) the ref is computed but names nothing stored.
 */
export type ObjectWriter = (projectId: string, objectId: string, val: PlainJson, wbUserId: string) => Promise<string>;

export interface FilesDeps {
  readonly store: ClickHouseStore;
  /** FILE_MAX_BYTES: larger uploads are refused with 413 and nothing of them is kept. */
  readonly maxFileBytes: number;
  readonly objects?: ObjectWriter | null;
}

/** Room for the form's text fields and part headers on top of the file itself, for the Content-Length check. */
const FORM_OVERHEAD_BYTES = 64 * 1024;

/** The object id an image gets, as `weave.publish` names an unnamed PIL image (its class name). */
export const IMAGE_OBJECT_ID = "Image";

/**
 * POST /file/create (and /files/create), /file/content (and /files/content),
 * /files/query_stats (and /files/stats), /image/create. Writes go straight to ClickHouse, so
 * an answered upload is readable by the next request.
 */
export function mountFileRoutes(api: HttpApi, deps: FilesDeps): void {
  const repo = new FilesRepository(deps.store);
  const upload = (ctx: RequestContext, screen?: Screen) => receiveUpload(ctx, repo, deps.maxFileBytes, screen);

  for (const op of [fileCreateOp, filesCreateAlias]) {
    api.mount(op, async (_input, ctx) => ({ digest: (await upload(ctx)).digest }));
  }

  for (const op of [fileContentOp, filesContentAlias]) {
    api.mount(op, async ({ body }, ctx) => {
      const file = await repo.find(body.project_id, body.digest);
      if (!file) throw new NotFoundError(`file ${body.digest} not found in project ${body.project_id}`);
      await sendContent(ctx.res, file, repo.content(file));
    });
  }

  for (const op of [filesQueryStatsOp, filesStatsAlias]) {
    api.mount(op, async ({ body }) => ({ total_size_bytes: await repo.totalSize(body.project_id) }));
  }

  api.mount(imageCreateOp, async (_input, ctx) => {
    const seen: { format?: ImageFormat } = {};
    const stored = await upload(ctx, (content) => screenImage(content, (format) => (seen.format = format)));
    if (!seen.format) throw new Error("an image upload was stored without its format being recognised");
    const val = imageObjectValue(seen.format, stored.digest);
    const digest = deps.objects ? await deps.objects(stored.projectId, IMAGE_OBJECT_ID, val, ctx.principal.username) : objectDigest(fromPlainJson(val));
    const [entity = "", project = ""] = stored.projectId.split("/");
    return { digest: stored.digest, ref: formatRef({ kind: "object", entity, project, name: IMAGE_OBJECT_ID, digest, extra: [] }) };
  });
}

/** Lets an upload's bytes through, or refuses them (e.g. not an image) before they are stored. */
type Screen = (content: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>;

/**
 * Reads an upload form: `project_id`, then the `file` part, and optionally `expected_digest`.
 * The project is checked against the key as soon as its field arrives, so a key that may not
 * reach it gets 403 before any byte of the file is read; a file part before `project_id` is
 * refused for the same reason. The file is stored in chunks as it streams and recorded under
 * its digest only once the whole body was read and checked.
 */
async function receiveUpload(ctx: RequestContext, repo: FilesRepository, maxBytes: number, screen?: Screen): Promise<StagedUpload> {
  refuseDeclaredOversize(ctx, maxBytes);
  let project: ReachedProject | null = null;
  const { fields, file: staged } = await readSingleFileForm(ctx.req, ctx.res, {
    fileField: "file",
    onField: (name, value) => {
      if (name === "project_id") project = ctx.reachProject(projectIdField(value));
    },
    onFile: async ({ stream }) => {
      if (!project) throw ValidationError.at(["body", "project_id"], "project_id is required and must come before the file part", "missing");
      return repo.stage(project, screen ? screen(stream) : stream, maxBytes);
    },
    discard: (done) => repo.discard(done),
  });
  const expected = fields.get("expected_digest");
  if (expected && expected !== staged.digest) {
    await repo.discard(staged);
    throw new ClientError(400, `digest mismatch: expected_digest is ${expected}, the content's digest is ${staged.digest}`);
  }
  await repo.commit(staged);
  return staged;
}

function projectIdField(value: string): string {
  const parsed = UploadFields.shape.project_id.safeParse(value);
  if (parsed.success) return parsed.data;
  throw ValidationError.at(["body", "project_id"], parsed.error.issues[0]?.message ?? "invalid project id");
}

/** A body announced larger than the limit allows is refused before any of it is read. */
function refuseDeclaredOversize(ctx: RequestContext, maxBytes: number): void {
  const declared = Number(ctx.req.headers["content-length"] ?? Number.NaN);
  if (declared > maxBytes + FORM_OVERHEAD_BYTES) {
    closeAfterAnswer(ctx.res);
    throw new ClientError(413, `the file is larger than the limit of ${maxBytes} bytes`);
  }
}

/**
 * Streams a file's chunks as they are read from ClickHouse, waiting for the client to take
 * each one. A failure after the first byte cuts the connection: the client sees fewer bytes
 * than Content-Length promised, never a truncated file passed off as whole.
 */
async function sendContent(res: Response, file: StoredFile, chunks: AsyncIterable<Buffer>): Promise<void> {
  res.status(200).setHeader("Content-Type", "application/octet-stream");
  res.setHeader("Content-Length", String(file.sizeBytes));
  let sent = 0;
  try {
    for await (const chunk of chunks) {
      sent += chunk.length;
      if (sent > file.sizeBytes) throw new Error(`file ${file.digest}: more bytes stored than its size, ${file.sizeBytes}`);
      if (!res.write(chunk)) await drained(res);
      if (res.destroyed) return;
    }
    if (sent !== file.sizeBytes) throw new Error(`file ${file.digest}: ${sent} bytes stored, its size is ${file.sizeBytes}`);
    res.end();
  } catch (err) {
    if (res.headersSent) res.destroy();
    else for (const header of ["Content-Type", "Content-Length"]) res.removeHeader(header);
    throw err;
  }
}

/** Resolves when the response can take more, or when its connection is gone. */
function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done).off("close", done);
      resolve();
    };
    res.on("drain", done).on("close", done);
  });
}

/** An image as the Weave clients save a PIL image: a custom object whose one file is the image. */
export function imageObjectValue(format: ImageFormat, fileDigest: string): PlainJson {
  return { _type: "CustomWeaveType", weave_type: { type: "PIL.Image.Image" }, files: { [IMAGE_FILE_NAMES[format]]: fileDigest } };
}
