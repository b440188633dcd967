/** The suite's API keys (AUTH_KEYS of every service it starts); free of vitest, for global setups too. */
export const KEY_ACME = "acme-key-0123456789abcdef";
export const KEY_OTHER = "other-key-0123456789abcdef";
export const KEY_ADMIN = "admin-key-0123456789abcdef";

export const AUTH_KEYS = JSON.stringify([
  { key: KEY_ACME, username: "alice", entities: ["acme"] },
  { key: KEY_OTHER, username: "bob", entities: ["other"] },
  { key: KEY_ADMIN, username: "root", entities: ["*"] },
]);

export function basic(key: string): string {
  return `Basic ${Buffer.from(`api:${key}`).toString("base64")}`;
}
