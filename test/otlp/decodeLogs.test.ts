/**
 * OTLP logs requests decoded to the normalized log batch: the same request in protobuf (encoded
 * by protobufjs from our proto/ files) and in OTLP/JSON gives the same batch, field by field.
 */
import { describe, expect, it } from "vitest";
import { decodeLogsRequest, encodeLogsExportResponse, OtlpDecodeError } from "../../services/otlp/decode.js";
import { ExportLogsServiceRequest, ExportLogsServiceResponse } from "../../services/otlp/protobuf.js";

const TRACE = "0af7651916cd43dd8448eb211c80319c";
const SPAN = "b7ad6b7169203331";

const protobufRequest = () =>
  Buffer.from(
    ExportLogsServiceRequest.encode(
      ExportLogsServiceRequest.fromObject({
        resource_logs: [
          {
            resource: { attributes: [{ key: "service.name", value: { string_value: "agent" } }] },
            scope_logs: [
              {
                scope: { name: "gen_ai", version: "1.0" },
                log_records: [
                  {
                    time_unix_nano: "1700000000123456789",
                    observed_time_unix_nano: "1700000000223456789",
                    severity_number: 9,
                    severity_text: "INFO",
                    body: { kvlist_value: { values: [{ key: "content", value: { string_value: "2+2?" } }] } },
                    attributes: [{ key: "gen_ai.system", value: { string_value: "openai" } }],
                    flags: 1,
                    trace_id: Buffer.from(TRACE, "hex"),
                    span_id: Buffer.from(SPAN, "hex"),
                    event_name: "gen_ai.user.message",
                  },
                  { body: { string_value: "plain line" } },
                ],
              },
            ],
          },
        ],
      }),
    ).finish(),
  );

const jsonRequest = JSON.stringify({
  resourceLogs: [
    {
      resource: { attributes: [{ key: "service.name", value: { stringValue: "agent" } }] },
      scopeLogs: [
        {
          scope: { name: "gen_ai", version: "1.0" },
          logRecords: [
            {
              timeUnixNano: "1700000000123456789",
              observedTimeUnixNano: 1700000000223456789n.toString(),
              severityNumber: "SEVERITY_NUMBER_INFO",
              severityText: "INFO",
              body: { kvlistValue: { values: [{ key: "content", value: { stringValue: "2+2?" } }] } },
              attributes: [{ key: "gen_ai.system", value: { stringValue: "openai" } }],
              flags: 1,
              traceId: TRACE.toUpperCase(),
              spanId: SPAN,
              eventName: "gen_ai.user.message",
            },
            { body: { stringValue: "plain line" } },
          ],
        },
      ],
    },
  ],
});

const EXPECTED = {
  resources: [
    {
      attributes: { "service.name": "agent" },
      droppedAttributesCount: 0,
      schemaUrl: "",
      scopes: [
        {
          scope: { name: "gen_ai", version: "1.0", attributes: {}, droppedAttributesCount: 0 },
          schemaUrl: "",
          records: [
            {
              timeUnixNano: 1_700_000_000_123_456_789n,
              observedTimeUnixNano: 1_700_000_000_223_456_789n,
              severityNumber: 9,
              severityText: "INFO",
              body: { content: "2+2?" },
              attributes: { "gen_ai.system": "openai" },
              droppedAttributesCount: 0,
              flags: 1,
              traceId: TRACE,
              spanId: SPAN,
              eventName: "gen_ai.user.message",
            },
            {
              timeUnixNano: 0n, observedTimeUnixNano: 0n, severityNumber: 0, severityText: "", body: "plain line", attributes: {},
              droppedAttributesCount: 0, flags: 0, traceId: "", spanId: "", eventName: "",
            },
          ],
        },
      ],
    },
  ],
};

describe("decodeLogsRequest", () => {
  it("reads protobuf into the normalized log batch", () => {
    expect(decodeLogsRequest("protobuf", protobufRequest())).toEqual(EXPECTED);
  });

  it("reads OTLP/JSON into the same batch (hex ids lowercased, severity by name)", () => {
    expect(decodeLogsRequest("json", Buffer.from(jsonRequest))).toEqual(EXPECTED);
  });

  it("reads an empty body as an empty request, and refuses a value of the wrong type with its path", () => {
    expect(decodeLogsRequest("protobuf", Buffer.alloc(0))).toEqual({ resources: [] });
    expect(() => decodeLogsRequest("json", Buffer.from('{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"spanId":5}]}]}]}'))).toThrow(
      new OtlpDecodeError("resourceLogs[0].scopeLogs[0].logRecords[0].spanId: expected a string"),
    );
    expect(() => decodeLogsRequest("protobuf", Buffer.from([0x0a, 0x05, 0x01]))).toThrow(OtlpDecodeError);
  });
});

describe("encodeLogsExportResponse", () => {
  it("answers the empty response, or the partial success with its rejected records", () => {
    expect(encodeLogsExportResponse("json")).toBe("{}");
    expect(JSON.parse(encodeLogsExportResponse("json", { rejected_log_records: 2, error_message: "m" }) as string)).toEqual({
      partialSuccess: { rejectedLogRecords: "2", errorMessage: "m" },
    });
    expect((encodeLogsExportResponse("protobuf") as Buffer).length).toBe(0);
    const decoded = ExportLogsServiceResponse.toObject(ExportLogsServiceResponse.decode(encodeLogsExportResponse("protobuf", { rejected_log_records: 2, error_message: "m" }) as Buffer), { longs: Number });
    expect(decoded).toEqual({ partial_success: { rejected_log_records: 2, error_message: "m" } });
  });
});
