// Builds gen/ from the repository's protos/ and google/rpc's status and error details.
// The inputs are copied into build/protos first so that buf compiles exactly these files
// (google-proto-files carries thousands more) against its own well-known types.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const work = join(root, "build", "protos");
rmSync(join(root, "build"), { recursive: true, force: true });
rmSync(join(root, "gen"), { recursive: true, force: true });
mkdirSync(join(work, "google", "rpc"), { recursive: true });
cpSync(join(root, "..", "..", "protos", "holistic"), join(work, "holistic"), { recursive: true });
for (const file of ["status.proto", "error_details.proto"]) {
  cpSync(join(root, "node_modules", "google-proto-files", "google", "rpc", file), join(work, "google", "rpc", file));
}
execFileSync(join(root, "node_modules", ".bin", "buf"), ["generate", work, "--template", join(root, "buf.gen.yaml")], {
  cwd: root,
  stdio: "inherit",
});
console.log("generated gen/ from protos/ and google/rpc");
