import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { AuthKey } from "../config.js";
import { roleCovers, type Role } from "../keyRoles.js";
import { nowMicros } from "../times.js";

/**
 * Who a request is: the key's user and its role in each entity it may reach (`"*"`: every
 * entity, at that role).
 */
export interface Principal {
  readonly username: string;
  readonly roles: ReadonlyMap<string, Role>;
  /** The id of a key made over the API (`/admin/keys`); absent for configured keys. */
  readonly keyId?: string;
}

/** The principal of a key that holds one role in each of its entities. */
export function principalOf(username: string, entities: readonly string[], role: Role): Principal {
  return { username, roles: new Map(entities.map((entity) => [entity, role])) };
}

/** A key made over the API, as every process's ring holds it: one entity, one role, the secret's SHA-256 (hex). */
export interface StoredKey {
  readonly id: string;
  readonly entity: string;
  readonly role: Role;
  readonly name: string;
  readonly secretSha256: string;
}

/** The role of a configured key that names none (AUTH_KEYS, the local key): admin, so that it can make the others. */
const BOOTSTRAP_ROLE: Role = "admin";

/** The SHA-256 of a key's secret, as stored and compared. */
export const secretDigest = (secret: string): Buffer => createHash("sha256").update(secret).digest();

interface Entry {
  readonly digest: Buffer;
  readonly principal: Principal;
}

const storedEntry = (key: StoredKey): Entry => ({
  digest: Buffer.from(key.secretSha256, "hex"),
  principal: { username: key.name, roles: new Map([[key.entity, key.role]]), keyId: key.id },
});

/** Secrets a ring remembers having looked up (KeyRing `found`) before it forgets them all. */
const MAX_FOUND = 1_000;

/**
 * The keys a process accepts: the configured ones (AUTH_KEYS or the local key) and those made
 * over the API, which auth/keySync.ts reloads from ClickHouse and the process that makes or
 * revokes one changes at once. Remembers when each stored key was last used, for keySync to write.
 */
export class KeyRing {
  private readonly configured: readonly Entry[];
  private stored: readonly Entry[] = [];
  /** Bumped by every change made here, so that a reload read before it does not undo it. */
  private changes = 0;
  private uses = new Map<string, number>();
  /**
   * Secrets already looked up, so that a client sending one request after another pays the
   * digest and the comparisons once; forgotten whenever the keys change, so a revoked key is
   * refused as soon as this process knows, and bounded against a stream of distinct secrets.
   */
  private found = new Map<string, Principal>();

  constructor(keys: readonly AuthKey[]) {
    this.configured = keys.map((k) => ({ digest: secretDigest(k.key), principal: principalOf(k.username, k.entities, k.role ?? BOOTSTRAP_ROLE) }));
  }

  /** Compares against every key in constant time per key, so timing tells nothing. */
  find(secret: string): Principal | null {
    const known = this.found.get(secret) ?? this.compare(secret);
    if (known === null) return null;
    if (known.keyId !== undefined) this.uses.set(known.keyId, nowMicros());
    if (this.found.size >= MAX_FOUND) this.found.clear();
    this.found.set(secret, known);
    return known;
  }

  private compare(secret: string): Principal | null {
    const candidate = secretDigest(secret);
    let found: Principal | null = null;
    for (const entry of this.configured) {
      if (timingSafeEqual(entry.digest, candidate)) found = entry.principal;
    }
    for (const entry of this.stored) {
      if (entry.digest.length === candidate.length && timingSafeEqual(entry.digest, candidate)) found = entry.principal;
    }
    return found;
  }

  /** A mark to pass to `replaceStored` with the keys read after taking it. */
  mark(): number {
    return this.changes;
  }

  /** The stored keys as a reload read them; ignored when this process changed them since `mark` (the next reload has it). */
  replaceStored(keys: readonly StoredKey[], mark: number): void {
    if (mark !== this.changes) return;
    this.stored = keys.map(storedEntry);
    this.found = new Map();
  }

  add(key: StoredKey): void {
    this.changes += 1;
    this.stored = [...this.stored.filter((e) => e.principal.keyId !== key.id), storedEntry(key)];
    this.found = new Map();
  }

  remove(id: string): void {
    this.changes += 1;
    this.stored = this.stored.filter((e) => e.principal.keyId !== id);
    this.found = new Map();
  }

  /** When this process last saw the stored key used, if not yet taken by `takeUses`. */
  pendingUse(id: string): number | undefined {
    return this.uses.get(id);
  }

  /** When each stored key was last used since the previous call (key id → microseconds). */
  takeUses(): Map<string, number> {
    const taken = this.uses;
    this.uses = new Map();
    return taken;
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
