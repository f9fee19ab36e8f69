// JSON Lines of holistic.v1.Prediction in protobuf's canonical JSON mapping (as every language writes it).
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { createGunzip } from "node:zlib";
import { fromJson, toJsonString } from "@bufbuild/protobuf";
import { PredictionSchema } from "../gen/holistic/v1/prediction_pb.js";

/** Yields { number, prediction } or { number, error } per non-blank line; .gz files are read gunzipped. */
export async function* readPredictions(path) {
  let input = createReadStream(path);
  if (path.endsWith(".gz")) input = input.pipe(createGunzip());
  let number = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    number += 1;
    if (!text.trim()) continue;
    try {
      yield { number, prediction: fromJson(PredictionSchema, JSON.parse(text)) };
    } catch (err) {
      yield { number, error: `not a holistic.v1.Prediction: ${err.message}` };
    }
  }
}

export function predictionToJsonLine(prediction) {
  return toJsonString(PredictionSchema, prediction);
}
