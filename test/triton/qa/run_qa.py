"""Runs one of Triton's QA client test files (vendored under upstream/)
against one server and prints, as JSON, the outcome of each test:
{"Class.test_name": {"outcome": "pass" | "fail" | "error" | "skip", "detail": "..."}}.

Usage: run_qa.py HTTP_HOST:PORT GRPC_HOST:PORT L0_x/file.py [--only Class] [--skip Class.test ...]

Upstream's test.sh scripts start tritonserver on the default ports 8000 and
8001 for each file; here each server listens on a free port. So the
upstream tree is copied into a temporary directory with its
"localhost:8000", "localhost:8001" and "{_tritonserver_ipaddr}:800x"
addresses replaced by the server's, and the tests run there (they write
test_results.txt into the working directory, as upstream's do). Upstream
runs each shared-memory test on a fresh server; here the registrations are
cleared before each test instead (see reset()).
"""

import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
import traceback
import unittest
from pathlib import Path

UPSTREAM = Path(__file__).resolve().parent / "upstream"


def copy_tree(dest: Path, http: str, grpc: str) -> None:
    for source in UPSTREAM.rglob("*.py"):
        text = source.read_text()
        text = text.replace('"localhost:8000"', f'"{http}"').replace('"localhost:8001"', f'"{grpc}"')
        text = text.replace("http://localhost:8000/", f"http://{http}/")
        text = text.replace('f"{_tritonserver_ipaddr}:8000"', f'"{http}"').replace('f"{_tritonserver_ipaddr}:8001"', f'"{grpc}"')
        target = dest / source.relative_to(UPSTREAM)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def reset(http: str) -> None:
    """What a fresh server would hold: no shared-memory registrations."""
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(http)
    try:
        client.unregister_system_shared_memory()
        client.unregister_cuda_shared_memory()
    except Exception:  # noqa: BLE001 - a server without the extension has nothing to clear
        pass
    finally:
        client.close()


class Outcomes(unittest.TestResult):
    def __init__(self, http: str):
        super().__init__()
        self.http = http
        self.outcomes: dict = {}

    @staticmethod
    def key(test) -> str:
        # A subTest reports under its parent test.
        test = getattr(test, "test_case", test)
        return f"{type(test).__name__}.{test._testMethodName}"

    def record(self, test, outcome: str, detail: str = "") -> None:
        key = self.key(test)
        previous = self.outcomes.get(key)
        if previous is None or previous["outcome"] == "pass":
            self.outcomes[key] = {"outcome": outcome, "detail": detail[-1500:]}

    def startTest(self, test):
        super().startTest(test)
        reset(self.http)

    def addSuccess(self, test):
        self.record(test, "pass")

    def addFailure(self, test, err):
        self.record(test, "fail", "".join(traceback.format_exception(*err)))

    def addError(self, test, err):
        self.record(test, "error", "".join(traceback.format_exception(*err)))

    def addSkip(self, test, reason):
        self.record(test, "skip", reason)

    def addSubTest(self, test, subtest, err):
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self.record(test, kind, f"{subtest}: " + "".join(traceback.format_exception(*err)))


def iterate(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from iterate(item)
        else:
            yield item


def main() -> int:
    http, grpc, file, *rest = sys.argv[1:]
    skip = {rest[i + 1] for i in range(len(rest) - 1) if rest[i] == "--skip"}
    only = {rest[i + 1] for i in range(len(rest) - 1) if rest[i] == "--only"}
    with tempfile.TemporaryDirectory(prefix="triton-qa-") as temp:
        root = Path(temp)
        copy_tree(root, http, grpc)
        path = root / file
        os.chdir(path.parent)
        sys.path[:0] = [str(path.parent), str(root / "common")]
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        loader = unittest.defaultTestLoader
        tests = [t for t in iterate(loader.loadTestsFromModule(module)) if Outcomes.key(t) not in skip]
        suite = unittest.TestSuite(t for t in tests if not only or type(t).__name__ in only)
        result = Outcomes(http)
        # The tests print a great deal (verbose clients); keep stdout for the JSON.
        real_stdout = sys.stdout
        sys.stdout = io.StringIO()
        try:
            suite.run(result)
        finally:
            sys.stdout = real_stdout
        os.chdir("/")
        shutil.rmtree(root, ignore_errors=True)
    json.dump(result.outcomes, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
