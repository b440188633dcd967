import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Operation } from "../../services/contract/operation.js";
import { roleCovers, ROLES, type Role } from "../../services/keyRoles.js";
import { baseModels } from "../../services/lm/index.js";
import { AUTH_KEYS, basic, client, KEY_ADMIN, KEY_OTHER, startTestService } from "../support/service.js";
import { formOf, KEY_ONLY_BODIES, PROJECT_REQUESTS } from "./operationRequests.js";

/**
 * Every mounted operation × every role: a key of the project's entity (and a key of every
 * entity) gets 403 exactly when its role is below the one the operation declares, and another
 * entity's admin always gets 403. The requests are the ones of operationRequests.ts (valid,
 * naming an `acme` project); an allowed role may still be refused otherwise (404 for a made-up
 * id, 422), just never with 403.
 */
const ROLE_KEYS: Record<Role, string> = { viewer: "matrix-viewer-0123456789", writer: "matrix-writer-0123456789", admin: "matrix-admin-01234567890" };
const ALL_ENTITIES_VIEWER = "matrix-all-viewer-0123456789";
const MATRIX_KEYS = JSON.stringify([
  ...(JSON.parse(AUTH_KEYS) as unknown[]),
  ...ROLES.map((role) => ({ key: ROLE_KEYS[role], username: `acme-${role}`, entities: ["acme"], role })),
  { key: ALL_ENTITIES_VIEWER, username: "everywhere", entities: ["*"], role: "viewer" },
]);

describe("roles of every operation", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  const made = { model_id: "", job_id: "" };

  beforeAll(async () => {
    service = await startTestService({ AUTH_KEYS: MATRIX_KEYS });
    // A model and a job of the project, for the operations that look their project up.
    const admin = client(service.url, KEY_ADMIN);
    made.model_id = (await admin.json<{ id: string }>("/v1/preview/models", { entity: "acme", project: "scoped", name: "m1", base_model: baseModels()[0]!.id })).id;
    const job = { model_id: made.model_id, training_data_url: "weave:///acme/scoped/file/missing" };
    made.job_id = (await admin.json<{ id: string }>("/v1/preview/sft-training-jobs", job)).id;
  });
  afterAll(async () => {
    await service.stop();
  });

  const send = async (op: Operation, key: string): Promise<number> => {
    const project = PROJECT_REQUESTS[op.id];
    const keyOnlyBody = KEY_ONLY_BODIES[op.id];
    const filled = (text: string) => text.replace("{model_id}", made.model_id).replace("{job_id}", made.job_id);
    const json = project?.body ?? keyOnlyBody;
    const res = await fetch(`${service.url}${filled(project?.path ?? op.path)}`, {
      method: project || keyOnlyBody !== undefined ? (project ? op.method.toUpperCase() : "POST") : op.method.toUpperCase(),
      headers: { authorization: basic(key), ...(project?.form ? {} : { "content-type": "application/json" }), ...project?.headers },
      body: project?.form ? formOf(project.form) : json === undefined ? undefined : filled(JSON.stringify(json)),
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
