import { randomBytes } from "node:crypto";
import { roleIn, secretDigest, type KeyRing, type Principal } from "../auth/keys.js";
import { authMeOp, keyCreateOp, keyDeleteOp, keysListOp, type MeRes } from "../contract/adminKeys.js";
import { ForbiddenError, NotFoundError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import { uuidv7 } from "../ids.js";
import { roleCovers } from "../keyRoles.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { KeysRepository, type KeyRecord } from "../store/keys/keysRepository.js";
import { microsToIso, nowMicros } from "../times.js";

/** A new key's secret: 32 random bytes, prefixed so that a leaked one is recognisable. */
const newSecret = (): string => `th_${randomBytes(32).toString("base64url")}`;

/** What `/auth/me` answers for a principal. */
function whoIs(principal: Principal): MeRes {
  const roles = Object.fromEntries([...principal.roles].filter(([entity]) => entity !== "*"));
  return { username: principal.username, roles, all_entities: principal.roles.get("*") ?? null };
}

/**
 * `/admin/keys` and `/auth/me`. The process that makes or revokes a key changes its own ring at
 * once; the others read the change within seconds (auth/keySync.ts).
 */
export function mountAdminKeyRoutes(api: HttpApi, deps: { store: ClickHouseStore; keys: KeyRing }): void {
  const repo = new KeysRepository(deps.store);

  api.mount(keyCreateOp, async ({ body }, ctx) => {
    const held = roleIn(ctx.principal, body.entity);
    if (held === null || !roleCovers(held, body.role)) throw new ForbiddenError(`this key may not make a ${body.role} key of entity ${body.entity}`);
    const secret = newSecret();
    const key: KeyRecord = { id: uuidv7(), entity: body.entity, role: body.role, name: body.name, secretSha256: secretDigest(secret).toString("hex"), createdAt: nowMicros() };
    await repo.create(key);
    deps.keys.add(key);
    return { id: key.id, key: secret, entity: key.entity, role: key.role, name: key.name, created_at: microsToIso(key.createdAt) };
  });

  api.mount(keysListOp, async ({ query }) => {
    const keys = await repo.list(query.entity);
    return {
      keys: keys.map((k) => {
        const lastUsedAt = Math.max(k.lastUsedAt ?? 0, deps.keys.pendingUse(k.id) ?? 0);
        return { id: k.id, name: k.name, entity: k.entity, role: k.role, created_at: microsToIso(k.createdAt), last_used_at: lastUsedAt > 0 ? microsToIso(lastUsedAt) : null };
      }),
    };
  });

  api.mount(keyDeleteOp, async ({ params }, ctx) => {
    const key = await repo.find(params.id);
    if (!key) throw new NotFoundError(`API key ${params.id} not found`);
    ctx.reachProject(key.entity);
    await repo.revoke(key, nowMicros());
    deps.keys.remove(key.id);
    return {};
  });

  api.mount(authMeOp, async (_input, ctx) => whoIs(ctx.principal));
}
