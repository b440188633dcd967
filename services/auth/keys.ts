import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { AuthKey } from "../config.js";

/** Who a request is: the key's user and the entities it may reach ("*" = all). */
export interface Principal {
  readonly username: string;
  readonly entities: ReadonlySet<string>;
}

const digest = (text: string): Buffer => createHash("sha256").update(text).digest();

export class KeyRing {
  private readonly entries: { digest: Buffer; principal: Principal }[];

  constructor(keys: readonly AuthKey[]) {
    this.entries = keys.map((k) => ({ digest: digest(k.key), principal: { username: k.username, entities: new Set(k.entities) } }));
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
  const first = [...principal.entities].find((e) => e !== "*");
  return first ?? principal.username;
}

export function canReach(principal: Principal, projectId: string): boolean {
  if (principal.entities.has("*")) return true;
  const slash = projectId.indexOf("/");
  return principal.entities.has(slash < 0 ? projectId : projectId.slice(0, slash));
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
