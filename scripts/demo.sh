#!/usr/bin/env bash
# The seed document's workflow on the bundled MNIST demo model (trained on
# real handwritten digits: fixtures/mnist-model.ts): inspect the model's
# user-provided anchors (the seed's report), scaffold the Triton model
# repository with the seed's names, validate it offline, then send each
# sample image through the cpu reference plugin against the scaffolded model
# directory, as the seed's client sends them to the server.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
popef() { node "$root/bin/popef.js" "$@"; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$out"
cp -r "$root/fixtures/mnist/img" img

echo '$ popef dump --user-anchors executable.popef'
(cd "$root/fixtures/mnist" && node "$root/bin/popef.js" dump --user-anchors executable.popef)
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
