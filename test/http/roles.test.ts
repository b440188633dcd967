import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Operation } from "../../services/contract/operation.js";
import { roleCovers, ROLES, type Role } from "../../services/keyRoles.js";
import { validRequest } from "../hostile/hostile.js";
import { AUTH_KEYS, basic, KEY_ADMIN, KEY_OTHER, startTestService } from "../support/service.js";
import { makeLookedUp, type LookedUp } from "./operationRequests.js";

/**
 * Every mounted operation × every role: a key of the project's entity (and a key of every
 * entity) gets 403 exactly when its role is below the one the operation declares, and another
 * entity's admin always gets 403. The requests are the valid ones of operationRequests.ts
 * (naming an `acme` project); an allowed role may still be refused otherwise (404, 409, 422),
 * just never with 403.
 */
const ROLE_KEYS: Record<Role, string> = { viewer: "roles-viewer-0123456789", writer: "roles-writer-0123456789", admin: "roles-admin-0123456789" };
const ALL_ENTITIES_VIEWER = "roles-all-viewer-0123456789";
const ROLES_AUTH_KEYS = JSON.stringify([
  ...(JSON.parse(AUTH_KEYS) as unknown[]),
  ...ROLES.map((role) => ({ key: ROLE_KEYS[role], username: `acme-${role}`, entities: ["acme"], role })),
  { key: ALL_ENTITIES_VIEWER, username: "everywhere", entities: ["*"], role: "viewer" },
]);

describe("roles of every operation", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  let made: LookedUp;

  beforeAll(async () => {
    service = await startTestService({ AUTH_KEYS: ROLES_AUTH_KEYS });
    made = await makeLookedUp(service.url, KEY_ADMIN, "roles");
  });
  afterAll(async () => {
    await service.stop();
  });

  const send = async (op: Operation, key: string): Promise<number> => {
    const request = validRequest(op, made.fill);
    const res = await fetch(`${service.url}${request.path}`, {
      method: op.method.toUpperCase(),
      headers: { authorization: basic(key), ...(request.body instanceof FormData ? {} : { "content-type": "application/json" }), ...request.headers },
      body: op.method === "get" ? undefined : request.body,
    });
    await res.arrayBuffer();
    return res.status;
  };

  it("every operation but the public ones declares a role, and they none", () => {
    for (const op of service.operations) {
      expect({ op: op.id, declared: op.role === null ? "none" : "role" }).toEqual({ op: op.id, declared: op.scope.kind === "public" ? "none" : "role" });
    }
  });

  it("answers 403 exactly when the key's role is below the operation's, and always to another entity's admin", async () => {
    const cases: { op: Operation; key: string; name: string; forbidden: boolean }[] = [];
    for (const op of service.operations) {
      const needed = op.role;
      if (needed === null) continue;
      for (const role of ROLES) cases.push({ op, key: ROLE_KEYS[role], name: role, forbidden: !roleCovers(role, needed) });
      cases.push({ op, key: ALL_ENTITIES_VIEWER, name: "viewer of every entity", forbidden: !roleCovers("viewer", needed) });
      // Another entity's admin reaches no `acme` project; operations of no project answer it.
      cases.push({ op, key: KEY_OTHER, name: "admin of another entity", forbidden: op.scope.kind !== "key" });
    }
    // The refusals first, while every resource the requests name still exists (the allowed deletes remove some).
    cases.sort((a, b) => Number(b.forbidden) - Number(a.forbidden));
    const seen: { op: string; key: string; forbidden: boolean }[] = [];
    for (const c of cases) seen.push({ op: c.op.id, key: c.name, forbidden: (await send(c.op, c.key)) === 403 });
    expect(seen).toEqual(cases.map((c) => ({ op: c.op.id, key: c.name, forbidden: c.forbidden })));
  });
});
