// @holistic-eval/client: call the holistic gateway from Node.js through stubs generated from protos/.
export { contentBatchId, HolisticClient, WINDOWS } from "./client.js";
export { fromServiceError, HolisticError, InvalidPredictionsError, retryDelayMs, statusDetails, UnreachableError } from "./errors.js";
export { predictionToJsonLine, readPredictions } from "./jsonl.js";
export { evaluationServiceDefinition, serviceDefinition } from "./service.js";
export { PredictionSchema, PerturbationFamily, Task } from "../gen/holistic/v1/prediction_pb.js";
export { DimensionKind, ProfileSchema, WindowPreset } from "../gen/holistic/v1/profile_pb.js";
export { CompareProfilesResponseSchema, Decision, Verdict } from "../gen/holistic/v1/evaluation_service_pb.js";
export { create, fromJson, toJson, toJsonString } from "@bufbuild/protobuf";
