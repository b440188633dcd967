import type { z } from "zod";
import type { Role } from "../keyRoles.js";

/**
 * One operation of the API: its route, the schemas of each part of its request (path
 * parameters, query string, JSON body), its response, and the projects it touches. The
 * same object drives validation, the handler's types, the scope check and the OpenAPI
 * document.
 */
export type HttpMethod = "get" | "post" | "put" | "delete";

/** A schema's output type, `undefined` for a part the operation does not take. */
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** The validated parts of a request, as a handler and a scope receive them. */
export interface OperationInput<B = unknown, Q = unknown, P = unknown> {
  readonly body: B;
  readonly query: Q;
  readonly params: P;
}

export type InputOf<B, Q, P> = OperationInput<Out<B>, Out<Q>, Out<P>>;

export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Who may call an operation. The HTTP layer enforces it before the handler runs:
 * - `public`: no key (health);
 * - `key`: any valid key; the operation touches no project's data (version, server info);
 * - `projects`: a valid key that reaches every project the input names (`entity/project`);
 *   `of` lists them from the validated input (and headers, for OTLP's `project_id`);
 * - `streamedProject`: a valid key; the project is named inside a body the handler reads as
 *   a stream (multipart uploads), so the HTTP layer cannot know it before the handler runs.
 *   The handler confirms it with `ctx.reachProject(id)` (403 when the key may not reach it)
 *   before it stores anything; store writes of such bodies take the `ReachedProject` that
 *   call returns, never a bare string.
 * - `lookedUpProject`: a valid key; the request names a resource by id (a training model or
 *   job) whose project only the store knows. The handler looks it up (404 when unknown) and
 *   confirms its project with `ctx.reachProject(id)` (403) before it reads or changes anything.
 */
export type OperationScope<I> =
  | { readonly kind: "public" }
  | { readonly kind: "key" }
  | { readonly kind: "projects"; readonly of: (input: I, headers: RequestHeaders) => readonly string[] }
  | { readonly kind: "streamedProject" }
  | { readonly kind: "lookedUpProject" };

/**
 * The role (services/keyRoles.ts) a key needs in the entity of every project the operation
 * touches: checked by the HTTP layer for `projects` scopes and in `ctx.reachProject` for
 * `streamedProject` and `lookedUpProject`. For `key` scopes the key must hold it in some
 * entity, and the handler keeps to the entities where it does. `null` only for `public`
 * scopes (no key).
 */
export type OperationRole = Role | null;

declare const reached: unique symbol;
/** A project id the HTTP layer checked against the request's key (see `streamedProject`). */
export type ReachedProject = string & { readonly [reached]: true };

export interface Operation<
  B extends z.ZodType | undefined = z.ZodType | undefined,
  Q extends z.ZodType | undefined = z.ZodType | undefined,
  P extends z.ZodType | undefined = z.ZodType | undefined,
  R extends z.ZodType = z.ZodType,
> {
  readonly id: string;
  readonly method: HttpMethod;
  /** OpenAPI form: `/objs/{object_id}/versions/{digest}/tags`. */
  readonly path: string;
  readonly summary: string;
  readonly tag: string;
  readonly body?: B;
  readonly query?: Q;
  readonly params?: P;
  readonly response: R;
  readonly scope: OperationScope<InputOf<B, Q, P>>;
  /** Required of every operation, so that none is mounted without saying who may call it. */
  readonly role: OperationRole;
  /** Answers JSON lines instead of one JSON document. */
  readonly streamed?: boolean;
  /** Takes a body other than JSON (described here, read by its handler). */
  readonly rawBody?: string;
  /**
   * Also keeps the JSON body's text as received (`ctx.bodyText`), for handlers that must read
   * it losslessly (digests: `1.0` stays a float, big integers stay exact).
   */
  readonly keepBodyText?: boolean;
  /** Takes a multipart/form-data body with these parts (documented; read and checked by its handler). */
  readonly multipart?: z.ZodType;
  /** Answers raw bytes of this content type (e.g. `application/octet-stream`) instead of JSON. */
  readonly rawResponse?: string;
  /** Another path for an operation documented under its main path: left out of the OpenAPI document. */
  readonly alias?: boolean;
  /**
   * What a repeat of a request under the same `X-Weave-Retry-Id` (a client's name for one
   * logical request, sent on each of its attempts) gets; http/retries.ts. Absent: the header is
   * ignored and a repeat is applied again, for reads and for writes whose effect and answer a
   * repeat leaves as they were (`/obj/create`, purges).
   * - `remembered`: the process answers a repeat it has seen from memory (bounded), without
   *   applying it again; a repeat that reaches another process is applied again, which the
   *   handler makes exact (ingest: ids it generates are derived from the retry id).
   * - `recorded`: the answer is also kept in ClickHouse (`request_retries`), so a repeat in any
   *   process gets the first answer and nothing is applied twice (writes that generate ids or
   *   timestamps, or whose answer a repeat would change: `num_deleted`).
   */
  readonly retries?: "remembered" | "recorded";
  /**
   * A hand-written check of the body for a hot path: answers exactly what the body schema's
   * `parse` answers, or null, which sends the body to the schema (errors, unknown fields).
   */
  readonly fastBody?: (body: unknown) => (B extends z.ZodType ? z.output<B> : never) | null;
  /**
   * The operation's writes go through the queue: answered once durable, stored a moment
   * later. Every other operation on a project first waits (boundedly) until what was queued
   * for that project before it is stored, so a client reads what it just wrote.
   */
  readonly queued?: true;
}

export function operation<
  B extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  P extends z.ZodType | undefined = undefined,
  R extends z.ZodType = z.ZodType,
>(op: Operation<B, Q, P, R>): Operation<B, Q, P, R> {
  return op;
}

/** The same operation under another path and id (mounted with the same handler), left out of the OpenAPI document. */
export function aliasOf<O extends Operation>(op: O, id: string, path: string): O {
  return { ...op, id, path, alias: true };
}

export const PUBLIC = { kind: "public" } as const;
export const ANY_KEY = { kind: "key" } as const;
export const STREAMED_PROJECT = { kind: "streamedProject" } as const;
export const LOOKED_UP_PROJECT = { kind: "lookedUpProject" } as const;

/** The project named by the path: `/v2/{entity}/{project}/...`. */
export const PATH_PROJECT = {
  kind: "projects",
  of: ({ params }: { params: { entity: string; project: string } }) => [`${params.entity}/${params.project}`],
} as const;

/** The project named by the body's `project_id`. */
export const BODY_PROJECT = { kind: "projects", of: ({ body }: { body: { project_id: string } }) => [body.project_id] } as const;

