#!/usr/bin/env bash
# The seed document's workflow on the bundled MNIST demo model (trained on
# real handwritten digits: fixtures/mnist-model.ts): inspect the model's
# user-provided anchors (the seed's report), scaffold the Triton model
# repository with the seed's names, validate it offline, then send each
# sample image through the cpu reference plugin against the scaffolded model
# directory, as the seed's client sends them to the server.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
popef() { node "$root/bin/popef.cjs" "$@"; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$out"
cp -r "$root/fixtures/mnist/img" img

echo '$ popef dump --user-anchors executable.popef'
(cd "$root/fixtures/mnist" && node "$root/bin/popef.cjs" dump --user-anchors executable.popef)
echo
echo '$ popef scaffold executable.popef --repository models --model mnist --name input=digit_image --name softmax/Softmax:0=output_labels'
popef scaffold "$root/fixtures/mnist/executable.popef" --repository models --model mnist \
  --name input=digit_image --name softmax/Softmax:0=output_labels
echo
echo '$ popef validate models'
popef validate models
echo
echo '$ for f in img/*.png; do popef run models/mnist --plugin cpu --input digit_image=$f --top-k 1; done'
for f in img/*.png; do
  name="$(basename "$f")"
  popef run models/mnist --plugin cpu --input "digit_image=$f" --top-k 1 --json |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const out = JSON.parse(s).outputs.find((o) => o.name === "output_labels");
      console.log(`Predicted digit for file "${process.argv[1]}": ${out.topK[0][0].index}`);
    });' "$name"
done

# The walkthrough's last step as written: its tritonclient program against a
# server. popef serve puts the repository behind Triton's protocol on the cpu
# plugin; the client is unchanged (gRPC, port from the server's start line).
python="${POPEF_CLIENT_PYTHON:-$root/.venv/bin/python}"
echo
if [ -x "$python" ] && "$python" -c 'import tritonclient.grpc, PIL' >/dev/null 2>&1; then
  echo '$ popef serve models &   # then the walkthrough client, over gRPC'
  node "$root/bin/popef.cjs" serve models --plugin cpu --http-port 0 --grpc-port 0 2>serve.log &
  server=$!
  for _ in $(seq 1 200); do grep -q 'popef serve: ready' serve.log && break; sleep 0.1; done
  port="$(sed -n 's/.*gRPC on [^:]*:\([0-9]*\).*/\1/p' serve.log)"
  if [ -z "$port" ]; then
    cat serve.log >&2
    kill "$server" 2>/dev/null || true
    exit 1
  fi
  "$python" "$root/test/serve/clients/mnist_client.py" "127.0.0.1:$port" img
  kill -TERM "$server"
  wait "$server"
else
  echo "(skipped: popef serve with the walkthrough's tritonclient program needs Python with tritonclient and pillow; bash .ci/run installs them into .venv)"
fi
