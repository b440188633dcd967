import { describe, it, expect } from "vitest";
import { JsonTraceSerializer, ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { encodeExportResponse, encodeStatus } from "../../services/otlp/decode.js";
import { RpcStatus } from "../../services/otlp/protobuf.js";

describe("encodeExportResponse", () => {
  it("answers a full success with an empty response", () => {
    expect(encodeExportResponse("protobuf")).toEqual(Buffer.alloc(0));
    expect(encodeExportResponse("json")).toBe("{}");
  });

  it("encodes partial success with the OTLP field numbers", () => {
    const body = encodeExportResponse("protobuf", { rejected_spans: 2, error_message: "x" });
    // partial_success (1, length 5) { rejected_spans (1) = 2, error_message (2) = "x" }
    expect(body.toString("hex")).toBe("0a050802120178");
  });

  it("is read back by the OpenTelemetry JS deserializers", () => {
    const partial = { rejected_spans: 3, error_message: "span \"a\" (01): invalid trace id" };
    const fromProtobuf = ProtobufTraceSerializer.deserializeResponse(encodeExportResponse("protobuf", partial));
    expect(Number(fromProtobuf.partialSuccess?.rejectedSpans)).toBe(3);
    expect(fromProtobuf.partialSuccess?.errorMessage).toBe(partial.error_message);
    const fromJson = JsonTraceSerializer.deserializeResponse(Buffer.from(encodeExportResponse("json", partial)));
    expect(fromJson).toEqual({ partialSuccess: { rejectedSpans: "3", errorMessage: partial.error_message } });
  });
});

describe("encodeStatus", () => {
  it("encodes google.rpc.Status in protobuf", () => {
    const body = encodeStatus("protobuf", 3, "bad");
    // code (1) = 3, message (2) = "bad"
    expect(body.toString("hex")).toBe("08031203626164");
    expect(RpcStatus.toObject(RpcStatus.decode(body))).toEqual({ code: 3, message: "bad" });
  });

  it("encodes google.rpc.Status in JSON", () => {
    expect(encodeStatus("json", 3, "resourceSpans: expected an array")).toBe('{"code":3,"message":"resourceSpans: expected an array"}');
  });
});
