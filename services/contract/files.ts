import { ProjectId } from "./common.js";
import { aliasOf, BODY_PROJECT, STREAMED_PROJECT, operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * Files and images (spec: tracing-api.md, "Objects, refs, digests"; weave-python-sdk.md §4).
 * What each operation does is written in services/query/filesRoutes.ts; storage in
 * services/store/files/schema.ts.
 */

const FILES = "Files";
const IMAGES = "Images";

const Digest = z.string().min(1).max(256).openapi({ description: "A file digest, as /file/create answered it" });
const Binary = z.string().openapi({ type: "string", format: "binary" });

/** The text fields of an upload form; the file part is read as a stream by the handler. */
export const UploadFields = z.object({
  project_id: ProjectId.openapi({ description: "Must come before the file part: the key's reach is checked before any byte is stored" }),
  expected_digest: z.string().max(256).optional().openapi({ description: "When given (non-empty), the upload is refused (400) unless its digest is this one" }),
});

export const FileCreateForm = UploadFields.extend({ file: Binary }).openapi("FileCreateForm");
export const FileCreateRes = z.object({ digest: z.string() }).openapi("FileCreateRes");

export const FileContentReadReq = z.object({ project_id: ProjectId, digest: Digest }).openapi("FileContentReadReq");
export type FileContentReadReq = z.infer<typeof FileContentReadReq>;

export const FilesStatsReq = z.object({ project_id: ProjectId }).openapi("FilesStatsReq");
export const FilesStatsRes = z
  .object({ total_size_bytes: z.number().int().openapi({ description: "Bytes of the project's distinct files (the same content uploaded twice counts once)" }) })
  .openapi("FilesStatsRes");

export const ImageCreateForm = UploadFields.extend({
  file: Binary.openapi({ description: "A PNG, JPEG, GIF or WebP image (recognised by its first bytes)" }),
}).openapi("ImageCreateForm");
export const ImageCreateRes = z
  .object({
    digest: z.string().openapi({ description: "The image file's digest (read it back with /file/content)" }),
    ref: z.string().openapi({
      description:
        "weave:/// ref of the object `Image` whose value is the image as the Weave clients save a PIL image: " +
        '{"_type": "CustomWeaveType", "weave_type": {"type": "PIL.Image.Image"}, "files": {"image.<png|jpg|gif|webp>": <digest>}}',
    }),
  })
  .openapi("ImageCreateRes");

export const fileCreateOp = operation({
  id: "file_create",
  method: "post",
  path: "/file/create",
  summary: "Upload a file (multipart: project_id, then file) → its digest",
  tag: FILES,
  multipart: FileCreateForm,
  role: "writer",
  scope: STREAMED_PROJECT,
  response: FileCreateRes,
});
/** The plural paths are those the RemoteHTTP binding of the Weave Python SDK sends. */
export const filesCreateAlias = aliasOf(fileCreateOp, "files_create", "/files/create");

export const fileContentOp = operation({
  id: "file_content",
  method: "post",
  path: "/file/content",
  summary: "A file's bytes (application/octet-stream)",
  tag: FILES,
  body: FileContentReadReq,
  role: "viewer",
  scope: BODY_PROJECT,
  response: Binary,
  rawResponse: "application/octet-stream",
});
export const filesContentAlias = aliasOf(fileContentOp, "files_content", "/files/content");

export const filesQueryStatsOp = operation({
  id: "files_query_stats",
  method: "post",
  path: "/files/query_stats",
  summary: "Total size of a project's files",
  tag: FILES,
  body: FilesStatsReq,
  role: "viewer",
  scope: BODY_PROJECT,
  response: FilesStatsRes,
});
export const filesStatsAlias = aliasOf(filesQueryStatsOp, "files_stats", "/files/stats");

export const imageCreateOp = operation({
  id: "image_create",
  method: "post",
  path: "/image/create",
  summary: "Upload an image (PNG, JPEG, GIF or WebP) → its digest and a ref to it",
  tag: IMAGES,
  multipart: ImageCreateForm,
  role: "writer",
  scope: STREAMED_PROJECT,
  response: ImageCreateRes,
});
