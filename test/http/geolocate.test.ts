import { describe, expect, it } from "vitest";
import { client, serviceForFile } from "../support/service.js";

const service = serviceForFile({ TRUSTED_PROXIES: "127.0.0.1" });

describe("GET /geolocate", () => {
  it("locates the client named by a trusted proxy's X-Forwarded-For", async () => {
    const res = await client(service.url).get("/geolocate", { "x-forwarded-for": "203.0.113.9, 8.8.8.8" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ip: "8.8.8.8", country: "US" });
  });

  it("answers nulls for an address it cannot place", async () => {
    const res = await client(service.url).get("/geolocate", { "x-forwarded-for": "10.1.2.3" });
    expect(await res.json()).toEqual({ ip: "10.1.2.3", country: null, region: null, city: null, timezone: null });
  });

  it("needs a key", async () => {
    expect((await fetch(`${service.url}/geolocate`)).status).toBe(401);
  });
});
