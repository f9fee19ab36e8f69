// A @grpc/grpc-js service definition built from the protobuf-es descriptors in gen/: the same
// generated code gives the client its stub and the tests their fake servers.
import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { EvaluationService } from "../gen/holistic/v1/evaluation_service_pb.js";

export function serviceDefinition(service) {
  const definition = {};
  for (const method of service.methods) {
    const streams = (kind) => method.methodKind === kind || method.methodKind === "bidi_streaming";
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      originalName: method.name,
      requestStream: streams("client_streaming"),
      responseStream: streams("server_streaming"),
      requestSerialize: (message) => Buffer.from(toBinary(method.input, message)),
      requestDeserialize: (bytes) => fromBinary(method.input, bytes),
      responseSerialize: (message) => Buffer.from(toBinary(method.output, message)),
      responseDeserialize: (bytes) => fromBinary(method.output, bytes),
    };
  }
  return definition;
}

export const evaluationServiceDefinition = serviceDefinition(EvaluationService);
export const EvaluationServiceClient = grpc.makeGenericClientConstructor(evaluationServiceDefinition, "EvaluationService");
