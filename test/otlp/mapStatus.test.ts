import { describe, it, expect } from "vitest";
import { decodeJsonRequest } from "../../services/otlp/decode.js";
import { mapSpans } from "../../services/otlp/mapSpan.js";
import { CTX, makeSpan, mapOne, SPAN_ID, TRACE_ID } from "./support.js";

describe("mapSpans: status", () => {
  it("turns STATUS_CODE_ERROR into exception = the status message", () => {
    expect(mapOne(makeSpan({ status: { code: 2, message: "rate limited" } })).end.exception).toBe("rate limited");
  });

  it('uses "error" when an ERROR status has no message', () => {
    expect(mapOne(makeSpan({ status: { code: 2, message: "" } })).end.exception).toBe("error");
  });

  it("leaves exception null for UNSET and OK, whatever the message", () => {
    expect(mapOne(makeSpan({ status: { code: 0, message: "" } })).end.exception).toBeNull();
    expect(mapOne(makeSpan({ status: { code: 1, message: "fine" } })).end.exception).toBeNull();
  });

  it("reads the JSON enum name STATUS_CODE_ERROR the same way", () => {
    const body = JSON.stringify({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: TRACE_ID,
                  spanId: SPAN_ID,
                  name: "tool",
                  startTimeUnixNano: "1700000000000000000",
                  endTimeUnixNano: "1700000000000001000",
                  status: { code: "STATUS_CODE_ERROR", message: "tool failed" },
                },
              ],
            },
          ],
        },
      ],
    });
    const { events } = mapSpans(decodeJsonRequest(body), CTX);
    expect(events[0]).toMatchObject({ kind: "call_complete", exception: "tool failed", ended_at: 1_700_000_000_000_001 });
  });
});
