#!/usr/bin/env bash
# Runs the go tool on clients/go offline: stubs generated from ../../protos into gen/ (rebuilt when the
# protos change), and a GOPATH-mode build against Debian's Go sources in /usr/share/gocode (golang-go,
# golang-google-grpc-dev, golang-google-protobuf-dev, ...), since no module proxy is needed or reached.
# Build outputs and the build cache live in .build/ (ignored by git), so repeated runs are fast.
#   scripts/go.sh test ./...
#   scripts/go.sh build -o .build/bin/holistic-go ./cmd/holistic-go
#   scripts/go.sh gen            (only the stubs)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # clients/go
PROTOS=$(cd "$HERE/../../protos" && pwd)
IMPORT=github.com/holistic-eval/holistic/clients/go
GEN=$IMPORT/gen/holistic/v1
BUILD=$HERE/.build
LINK=$BUILD/gopath/src/$IMPORT
SYSTEM_GOPATH=${HOLISTIC_SYSTEM_GOPATH:-/usr/share/gocode}
PROTO_INCLUDE=${HOLISTIC_PROTO_INCLUDE:-/usr/include}

for tool in go protoc protoc-gen-go protoc-gen-go-grpc; do
  command -v "$tool" >/dev/null || {
    echo "$tool is missing: apt-get install golang-go protobuf-compiler protoc-gen-go protoc-gen-go-grpc" \
      "golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev golang-google-genproto-dev" >&2
    exit 1
  }
done

generate() {  # the protos carry no go_package option: M options map each file to the stubs' import path
  local stamp=$HERE/gen/.stamp want
  want=$( (cat "$PROTOS"/holistic/v1/*.proto; protoc --version; protoc-gen-go --version 2>&1) | sha256sum | cut -c1-16)
  [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && return 0
  local m="" f
  for f in "$PROTOS"/holistic/v1/*.proto; do m="${m}Mholistic/v1/$(basename "$f")=$GEN;holisticv1,"; done
  rm -rf "$HERE/gen"
  mkdir -p "$HERE/gen"
  (cd "$PROTOS" && protoc -I . -I "$PROTO_INCLUDE" \
    --go_out="$HERE/gen" --go_opt="paths=source_relative,${m%,}" \
    --go-grpc_out="$HERE/gen" --go-grpc_opt="paths=source_relative,${m%,}" holistic/v1/*.proto)
  echo "$want" >"$stamp"
}

generate
[ "${1:-}" = gen ] && exit 0
if [ "$(readlink "$LINK" 2>/dev/null)" != "$HERE" ]; then  # the module's place in the private GOPATH
  mkdir -p "$(dirname "$LINK")"
  ln -sfn "$HERE" "$LINK"
fi
export GO111MODULE=off GOPROXY=off GOFLAGS="${GOFLAGS:-}" GOPATH="$BUILD/gopath:$SYSTEM_GOPATH" GOCACHE="$BUILD/cache"
cd "$LINK"
export PWD="$LINK"
exec go "$@"
