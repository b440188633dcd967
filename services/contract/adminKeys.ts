import { ROLES } from "../keyRoles.js";
import { ANY_KEY, LOOKED_UP_PROJECT, operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * API keys made over the API (docs/keys.md): an admin of an entity makes, lists and revokes
 * the entity's keys; the secret is answered once, at creation, and only its SHA-256 is kept.
 * `/auth/me` tells any key what it may do (the UI shows admin pages from it).
 */

const TAG = "Keys";

export const KeyRole = z.enum(ROLES).openapi("KeyRole", { description: "`viewer` reads; `writer` also writes; `admin` also manages keys and settings and deletes projects' data" });
const Entity = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[^/\s*]+$/, "must be an entity name: no '/', '*' or whitespace")
  .openapi({ example: "acme" });
const KeyName = z.string().trim().min(1, "must not be empty").max(200).openapi({ description: "What the key is for (shown in lists; the user name of its requests)", example: "dashboard" });
const Timestamp = z.string().openapi({ description: "ISO 8601, UTC, microseconds" });

export const KeyCreateReq = z.object({ entity: Entity, role: KeyRole, name: KeyName }).openapi("KeyCreateReq");
export const KeyCreateRes = z
  .object({
    id: z.string(),
    key: z.string().openapi({ description: "The secret: shown only in this answer" }),
    entity: z.string(),
    role: KeyRole,
    name: z.string(),
    created_at: Timestamp,
  })
  .openapi("KeyCreateRes");

export const KeySummary = z
  .object({ id: z.string(), name: z.string(), entity: z.string(), role: KeyRole, created_at: Timestamp, last_used_at: Timestamp.nullable() })
  .openapi("KeySummary");
export const KeysListQuery = z.object({ entity: Entity });
export const KeysListRes = z
  .object({ keys: z.array(KeySummary).openapi({ description: "The entity's keys made over the API, oldest first (never a secret; keys from AUTH_KEYS are not listed)" }) })
  .openapi("KeysListRes");

export const KeyParams = z.object({ id: z.string().min(1).max(64) });
export const KeyDeleteRes = z.object({}).openapi("KeyDeleteRes");

export const MeRes = z
  .object({
    username: z.string(),
    roles: z.record(z.string(), KeyRole).openapi({ description: "The key's role in each entity it names" }),
    all_entities: KeyRole.nullable().openapi({ description: "The key's role in every entity (a `*` key), else null" }),
  })
  .openapi("MeRes");
export type MeRes = z.infer<typeof MeRes>;

/** The entity named by the body or query: an admin of it makes and lists its keys. */
export const keyCreateOp = operation({
  id: "admin_keys_create", method: "post", path: "/admin/keys", summary: "Make an API key of an entity (the secret is answered once)", tag: TAG,
  body: KeyCreateReq, response: KeyCreateRes, role: "admin", scope: { kind: "projects", of: ({ body }) => [body.entity] },
});
export const keysListOp = operation({
  id: "admin_keys_list", method: "get", path: "/admin/keys", summary: "List an entity's API keys (no secrets)", tag: TAG,
  query: KeysListQuery, response: KeysListRes, role: "admin", scope: { kind: "projects", of: ({ query }) => [query.entity] },
});
/** The key's entity is looked up by id (404 when unknown), then its admin checked (403). */
export const keyDeleteOp = operation({
  id: "admin_keys_delete", method: "delete", path: "/admin/keys/{id}", summary: "Revoke an API key (refused by every process within seconds)", tag: TAG,
  params: KeyParams, response: KeyDeleteRes, role: "admin", scope: LOOKED_UP_PROJECT,
});
export const authMeOp = operation({
  id: "auth_me", method: "get", path: "/auth/me", summary: "The key's user and its role in each entity", tag: TAG,
  response: MeRes, role: "viewer", scope: ANY_KEY,
});
