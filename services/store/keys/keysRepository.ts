import { ROLES, type Role } from "../../keyRoles.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder } from "../sql.js";

/** A key made over the API, as stored: the secret only as its SHA-256 (hex). */
export interface KeyRecord {
  readonly id: string;
  readonly entity: string;
  readonly role: Role;
  readonly name: string;
  readonly secretSha256: string;
  /** Microseconds since the epoch. */
  readonly createdAt: number;
}

/** A key as listed: no secret, and when it was last used (null: never, or not yet recorded). */
export interface ListedKey extends Omit<KeyRecord, "secretSha256"> {
  readonly lastUsedAt: number | null;
}

interface KeyRow {
  id: string;
  entity: string;
  role: string;
  name: string;
  secret_sha256: string;
  created_at: string | number;
}

const COLUMNS = "id, entity, role, name, secret_sha256, created_at";

const isRole = (text: string): text is Role => (ROLES as readonly string[]).includes(text);

function toRecord(row: KeyRow): KeyRecord | null {
  if (!isRole(row.role)) return null;
  return { id: row.id, entity: row.entity, role: row.role, name: row.name, secretSha256: row.secret_sha256, createdAt: Number(row.created_at) };
}

const records = (rows: readonly KeyRow[]): KeyRecord[] => rows.map(toRecord).filter((r): r is KeyRecord => r !== null);

/** The `api_keys` and `api_key_uses` tables (store/keys/schema.ts). */
export class KeysRepository {
  constructor(private readonly store: ClickHouseStore) {}

  /** Every key not revoked: what each process's key ring holds (auth/keySync.ts). */
  async live(): Promise<KeyRecord[]> {
    return records(await this.store.rows<KeyRow>("keys_live", { sql: `SELECT ${COLUMNS} FROM api_keys FINAL WHERE deleted = 0`, params: {} }));
  }

  async find(id: string): Promise<KeyRecord | null> {
    const pb = new ParamBuilder();
    const rows = await this.store.rows<KeyRow>("keys_find", { sql: `SELECT ${COLUMNS} FROM api_keys FINAL WHERE id = ${pb.str(id)} AND deleted = 0`, params: pb.params });
    return records(rows)[0] ?? null;
  }

  /** The entity's keys, oldest first, with when each was last used. */
  async list(entity: string): Promise<ListedKey[]> {
    const pb = new ParamBuilder();
    const keys = records(
      await this.store.rows<KeyRow>("keys_list", { sql: `SELECT ${COLUMNS} FROM api_keys FINAL WHERE entity = ${pb.str(entity)} AND deleted = 0 ORDER BY created_at, id`, params: pb.params }),
    );
    const uses = await this.lastUses(keys.map((k) => k.id));
    return keys.map(({ secretSha256: _secret, ...key }) => ({ ...key, lastUsedAt: uses.get(key.id) ?? null }));
  }

  private async lastUses(ids: readonly string[]): Promise<Map<string, number>> {
    if (ids.length === 0) return new Map();
    const pb = new ParamBuilder();
    const rows = await this.store.rows<{ id: string; used_at: string | number }>("keys_last_uses", {
      sql: `SELECT id, max(used_at) AS used_at FROM api_key_uses WHERE id IN ${pb.inStrings(ids)} GROUP BY id`,
      params: pb.params,
    });
    return new Map(rows.map((r) => [r.id, Number(r.used_at)]));
  }

  async create(key: KeyRecord): Promise<void> {
    await this.store.insert("keys_create", "api_keys", [{ ...this.row(key), deleted: 0, version: key.createdAt }]);
  }

  /** A newer version of the key's row that says it is revoked. */
  async revoke(key: KeyRecord, atMicros: number): Promise<void> {
    await this.store.insert("keys_revoke", "api_keys", [{ ...this.row(key), deleted: 1, version: Math.max(atMicros, key.createdAt + 1) }]);
  }

  /** When keys were used (key id → microseconds), one row per key. */
  async recordUses(uses: ReadonlyMap<string, number>): Promise<void> {
    await this.store.insert("keys_record_uses", "api_key_uses", [...uses].map(([id, usedAt]) => ({ id, used_at: usedAt })));
  }

  private row(key: KeyRecord) {
    return { id: key.id, entity: key.entity, role: key.role, name: key.name, secret_sha256: key.secretSha256, created_at: key.createdAt };
  }
}
