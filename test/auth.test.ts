import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { canReach, KeyRing, localKeys } from "../services/auth/keys.js";

describe("keys", () => {
  it("generates a local key once, private to the owner, and reuses it", () => {
    const dir = mkdtempSync(join(tmpdir(), "keys-"));
    const first = localKeys(dir);
    expect(first.created).toBe(true);
    expect(first.keys[0]).toMatchObject({ username: "local", entities: ["*"] });
    expect(statSync(join(dir, "local-api-key.json")).mode & 0o777).toBe(0o600);
    const second = localKeys(dir);
    expect(second.created).toBe(false);
    expect(second.keys[0]!.key).toBe(first.keys[0]!.key);
  });

  it("finds the key's user and scopes it to its entities", () => {
    const ring = new KeyRing([
      { key: "a".repeat(20), username: "alice", entities: ["acme"] },
      { key: "b".repeat(20), username: "root", entities: ["*"] },
    ]);
    const alice = ring.find("a".repeat(20))!;
    expect(alice.username).toBe("alice");
    expect(canReach(alice, "acme/x")).toBe(true);
    expect(canReach(alice, "other/x")).toBe(false);
    expect(canReach(ring.find("b".repeat(20))!, "other/x")).toBe(true);
    expect(ring.find("a".repeat(19))).toBeNull();
  });
});
