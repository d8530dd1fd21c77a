#!/usr/bin/env bash
# npm run demo: the README's walkthrough, end to end, on the bundled MNIST
# model (trained on real handwritten digits: fixtures/mnist-model.ts). It
# builds dist/ (npm ci does not: the package has no prepare script, so that
# installing its tarball runs none), writes the example into a temporary
# directory, dumps the model's user-provided anchors (the seed's report),
# scaffolds the Triton repository with the seed's names, validates it, runs
# each image through the cpu plugin, and last puts the repository behind
# popef serve and runs the walkthrough's tritonclient program against it.
#
# Standard output is a transcript: each "$ " line is a command, and pasted
# into bash in that order it prints the lines that follow it (the serve
# lines come on standard error). Notes go to standard error.
#
# The client needs Python with tritonclient and pillow, which
# scripts/client-python.sh finds or makes (once, in the git-ignored .venv).
# Without python3 or PyPI it says what is missing and how to get it, and the
# demo still exits 0.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
note() { printf 'demo: %s\n' "$*" >&2; }

node "$root/scripts/build.mjs"

work="$(mktemp -d)"
cleanup() {
  # A server still running (the demo failed before kill %1) goes with the demo.
  kill %1 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

# Prints a command, then runs exactly that text in this shell.
step() {
  printf '$ %s\n' "$1"
  eval "$1"
}

echo '# popef here is this checkout; in a project that installed the package, use npx popef.'
step "popef() { node $(printf '%q' "$root/bin/popef.cjs") \"\$@\"; }"
step 'popef example mnist mnist'
step 'cd mnist'
step 'popef dump --user-anchors executable.popef'
step 'popef scaffold executable.popef --repository models --model mnist --name input=digit_image --name softmax/Softmax:0=output_labels'
step 'popef validate models'
step "for f in img/*.png; do popef run models/mnist --plugin cpu --input digit_image=\$f --top-k 1 | grep 'Top 1'; done"

# The walkthrough's last step as written: its tritonclient program against a
# server. First the Python it needs (scripts/client-python.sh says what is
# missing when it cannot have it).
if ! python="$(bash "$root/scripts/client-python.sh")"; then
  note 'the rest of the walkthrough ran; only its client step was skipped'
  exit 0
fi

# Three ports free now, so that the printed commands name them (port 0 would
# make the pasted serve line pick others than the client line names).
read -r http grpc metrics < <(node -e '
  const net = require("node:net");
  const servers = [0, 1, 2].map(() => net.createServer().listen(0, "127.0.0.1"));
  Promise.all(servers.map((s) => new Promise((r) => s.once("listening", r)))).then(() => {
    console.log(servers.map((s) => s.address().port).join(" "));
    for (const s of servers) s.close();
  });')
# Job control as in the interactive shell the commands are pasted into: the
# job gets its own process group, and kill %1 reaches node, not only the
# subshell that runs the popef function.
set -m
step "popef serve models --http-port $http --grpc-port $grpc --metrics-port $metrics &"
# Pasted, one waits for the "ready" line; here the demo asks the server.
for _ in $(seq 1 300); do
  if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "http://127.0.0.1:$http/v2/health/ready"; then
    break
  fi
  if ! kill -0 %1 2>/dev/null; then
    note 'popef serve stopped before it was ready (its error is above)'
    exit 1
  fi
  sleep 0.1
done
step "$(printf '%q' "$python") mnist_client.py 127.0.0.1:$grpc img"
step 'kill %1'
wait
