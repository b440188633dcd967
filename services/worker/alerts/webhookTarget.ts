import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Where an alert may post (docs/resources.md, "Alerts"): an http(s) URL whose host is not
 * loopback, private or link-local (`localhost`, 127/8, 10/8, 172.16/12, 192.168/16,
 * 169.254/16, 0/8, ::1, ::, fc00::/7, fe80::/10, and those as IPv4-mapped IPv6), unless the
 * host, as written in the URL, is one of ALERTS_ALLOWED_HOSTS. `/alerts/create` checks the URL
 * as written (`refusal`); the delivery checks again every address the name resolves to
 * (`resolvedRefusal`), so a public name that points inside is not posted to either.
 */

const PRIVATE = new BlockList();
for (const [net, prefix] of [["0.0.0.0", 8], ["10.0.0.0", 8], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12], ["192.168.0.0", 16]] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv4");
}
PRIVATE.addAddress("::1", "ipv6");
PRIVATE.addAddress("::", "ipv6");
PRIVATE.addSubnet("fc00::", 7, "ipv6");
PRIVATE.addSubnet("fe80::", 10, "ipv6");

/** `::ffff:7f00:1` or `::ffff:127.0.0.1` → `127.0.0.1`; null for any other address. */
function mappedIpv4(address: string): string | null {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IP address is loopback, private or link-local. */
export function isPrivateAddress(address: string): boolean {
  const kind = isIP(address);
  if (kind === 4) return PRIVATE.check(address, "ipv4");
  if (kind !== 6) return false;
  const v4 = mappedIpv4(address);
  return v4 !== null ? PRIVATE.check(v4, "ipv4") : PRIVATE.check(address, "ipv6");
}

/** The URL's host without IPv6 brackets, lowercase. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();

const normalizeHost = (host: string): string => host.trim().replace(/^\[(.*)\]$/, "$1").toLowerCase();

export class WebhookTargets {
  private readonly allowed: ReadonlySet<string>;

  constructor(allowedHosts: readonly string[]) {
    this.allowed = new Set(allowedHosts.map(normalizeHost));
  }

  /** Why the URL may not be posted to as written, or null when it may. */
  refusal(text: string): string | null {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return "must be an http(s) URL";
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http(s) URL";
    const host = hostOf(url);
    if (this.allowed.has(host)) return null;
    if (host === "localhost" || host.endsWith(".localhost") || isPrivateAddress(host)) {
      return `the host ${host} is loopback or private; list it in ALERTS_ALLOWED_HOSTS to allow it`;
    }
    return null;
  }

  /** As `refusal`, and also when the name resolves to a loopback or private address. */
  async resolvedRefusal(text: string): Promise<string | null> {
    const written = this.refusal(text);
    if (written !== null) return written;
    const host = hostOf(new URL(text));
    if (this.allowed.has(host) || isIP(host) !== 0) return null;
    const addresses = await lookup(host, { all: true });
    const inside = addresses.find((a) => isPrivateAddress(a.address));
    return inside ? `the host ${host} resolves to the private address ${inside.address}; list it in ALERTS_ALLOWED_HOSTS to allow it` : null;
  }
}
