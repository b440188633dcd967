import { RefParseError } from "../errors.js";
import { parseRef, projectIdOf, type WeaveRef } from "../refs.js";
import { operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * `POST /refs/read_batch` (spec: tracing-api.md, "Objects, refs, digests"). What each kind
 * of ref answers is written in services/query/refsRoutes.ts.
 */

/** Most refs one request may read (as the Weave trace server allows). */
export const MAX_REFS_PER_BATCH = 1000;
const MAX_REF_CHARS = 4096;

/** Why a ref cannot be read, or null when it can (a table ref's path must start with a row id). */
function refProblem(text: string): string | null {
  let ref: WeaveRef;
  try {
    ref = parseRef(text);
  } catch (e) {
    if (e instanceof RefParseError) return e.message;
    throw e;
  }
  if (ref.kind === "table" && ref.extra.length > 0 && ref.extra[0]!.edge !== "id") return "a table ref's path must start with id/<row digest>";
  const badIndex = ref.extra.find((p) => p.edge === "index" && !/^-?\d{1,9}$/.test(p.value));
  if (badIndex) return `index ${JSON.stringify(badIndex.value)} is not an integer`;
  return null;
}

export const ReadableRef = z
  .string()
  .max(MAX_REF_CHARS)
  .superRefine((text, ctx) => {
    const problem = refProblem(text);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  })
  .openapi({ example: "weave:///acme/agents/object/my-dataset:9Q2sU0FgKP5gXa3bD1e5ZxjGq9kHvL2mWc8TrYpN4oA/attr/rows/id/u1Ph4QwWj2nT0rVb" });

export const RefsReadBatchReq = z
  .object({
    refs: z.array(ReadableRef).max(MAX_REFS_PER_BATCH).openapi({
      description: "Object, op, table, table-row (`.../table/<digest>/id/<row digest>`) and call refs, with `key`/`index`/`attr`/`id` path pairs",
    }),
  })
  .openapi("RefsReadBatchReq");
export type RefsReadBatchReq = z.infer<typeof RefsReadBatchReq>;

export const RefsReadBatchRes = z
  .object({ vals: z.array(z.unknown()).openapi({ description: "The value each ref names, in request order (null where a path leads nowhere)" }) })
  .openapi("RefsReadBatchRes");

export const refsReadBatchOp = operation({
  id: "refs_read_batch", method: "post", path: "/refs/read_batch", summary: "Read the values of refs", tag: "Refs",
  body: RefsReadBatchReq,
  // Only refs that passed the body schema reach here.
  role: "viewer",
  scope: { kind: "projects", of: ({ body }) => [...new Set(body.refs.map((r) => projectIdOf(parseRef(r))))] },
  response: RefsReadBatchRes,
});
