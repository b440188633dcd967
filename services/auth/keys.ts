import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { AuthKey } from "../config.js";
import { roleCovers, type Role } from "../keyRoles.js";

/**
 * Who a request is: the key's user and its role in each entity it may reach (`"*"`: every
 * entity, at that role).
 */
export interface Principal {
  readonly username: string;
  readonly roles: ReadonlyMap<string, Role>;
}

/** The principal of a key that holds one role in each of its entities. */
export function principalOf(username: string, entities: readonly string[], role: Role): Principal {
  return { username, roles: new Map(entities.map((entity) => [entity, role])) };
}

/** The role of a configured key that names none (AUTH_KEYS, the local key): admin, so that it can make the others. */
const BOOTSTRAP_ROLE: Role = "admin";

const digest = (text: string): Buffer => createHash("sha256").update(text).digest();

export class KeyRing {
  private readonly entries: { digest: Buffer; principal: Principal }[];

  constructor(keys: readonly AuthKey[]) {
    this.entries = keys.map((k) => ({ digest: digest(k.key), principal: principalOf(k.username, k.entities, k.role ?? BOOTSTRAP_ROLE) }));
  }

  /** Compares against every key in constant time per key, so timing tells nothing. */
  find(secret: string): Principal | null {
    const candidate = digest(secret);
    let found: Principal | null = null;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, candidate)) found = entry.principal;
    }
    return found;
  }
}

/**
 * The key's default entity: its first entity, or, for a key that reaches every entity
 * (`"*"`, e.g. the local key), its username.
 */
export function defaultEntity(principal: Principal): string {
  const first = [...principal.roles.keys()].find((e) => e !== "*");
  return first ?? principal.username;
}

/** The entity of `entity/project` (or of a bare entity name). */
export function entityOf(projectId: string): string {
  const slash = projectId.indexOf("/");
  return slash < 0 ? projectId : projectId.slice(0, slash);
}

/** The key's role in the entity of `entity/project` (or in a bare entity), null when it reaches none. */
export function roleIn(principal: Principal, projectId: string): Role | null {
  return principal.roles.get(entityOf(projectId)) ?? principal.roles.get("*") ?? null;
}

/** Whether the key reaches the project (or entity) with at least the role `needed`. */
export function canReach(principal: Principal, projectId: string, needed: Role = "viewer"): boolean {
  const held = roleIn(principal, projectId);
  return held !== null && roleCovers(held, needed);
}

/** Whether the key holds at least `needed` somewhere (operations that name no project). */
export function holdsAnywhere(principal: Principal, needed: Role): boolean {
  return [...principal.roles.values()].some((held) => roleCovers(held, needed));
}

/** The entities where the key holds at least `needed`; null when that is every entity (`"*"`). */
export function entitiesWith(principal: Principal, needed: Role = "viewer"): string[] | null {
  const all = principal.roles.get("*");
  if (all !== undefined && roleCovers(all, needed)) return null;
  return [...principal.roles].filter(([entity, held]) => entity !== "*" && roleCovers(held, needed)).map(([entity]) => entity);
}

/**
 * Without AUTH_KEYS, a local key is generated once under DATA_DIR (mode 600) and reused.
 * Returns the keys and whether the key is new (so that it is printed once).
 */
export function localKeys(dataDir: string): { keys: AuthKey[]; created: boolean } {
  const file = join(dataDir, "local-api-key.json");
  if (existsSync(file)) return { keys: [JSON.parse(readFileSync(file, "utf8")) as AuthKey], created: false };
  const key: AuthKey = { key: randomBytes(24).toString("hex"), username: "local", entities: ["*"] };
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(key), { mode: 0o600 });
  chmodSync(file, 0o600);
  return { keys: [key], created: true };
}
