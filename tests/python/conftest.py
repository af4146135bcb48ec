"""Real `fusetune serve` and `fusetune worker` processes on 127.0.0.1 for the Python client's tests.

As tests/service/service_test_util.h does for the C++ tests: each process gets a free port (port 0,
read back from its first line), its output in files of the test's temporary directory, and is
killed for good when its fixture ends. FUSETUNE_BINARY names the binary (ctest sets it); without
it, build/fusetune of the checkout.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.environ.get("FUSETUNE_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("FUSETUNE_BINARY") or os.path.join(ROOT, "build", "fusetune")
sys.path.insert(0, os.path.join(ROOT, "client", "python"))  # when run without PYTHONPATH

# Small graphs keep the run short: three element-wise ops, and the seed at sequence length 32.
CHAIN = """fn (%x: Tensor[(32, 64), float32]) {
  %0 = exp(%x);
  %1 = sigmoid(%0);
  add(%1, %x)
}
"""
SMALL_SEED = """fn (%x: Tensor[(12, 32, 64), float32], %y: Tensor[(12, 32, 64), float32], %z: Tensor[(12, 32, 32), float32]) {
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
}
"""


def eventually(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Process:
    """One `fusetune` process with stdout/stderr in files; killed and reaped by stop()."""

    def __init__(self, args, log_prefix, env=None):
        self.out_path, self.err_path = log_prefix + ".out", log_prefix + ".err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen([BINARY, *args], stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=err, env={**os.environ, **(env or {})})

    def out(self):
        with open(self.out_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def err(self):
        with open(self.err_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self):
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=10)


class Farm:
    """A server and its workers; `address` is host:port."""

    def __init__(self, directory, serve_args=(), worker_args=(), worker_env=None, workers=1):
        self.dir = str(directory)
        self.processes = []
        self.server = self._start(["serve", "--listen", "127.0.0.1:0", "--db",
                                   self.file("fusetune.db"), *serve_args], "serve")
        match = eventually(
            lambda: re.search(r"listening on 127\.0\.0\.1:(\d+)", self.server.out()), 20,
            "serve to listen")
        self.address = f"127.0.0.1:{match.group(1)}"
        self.worker_args = list(worker_args)
        for i in range(workers):
            self._start(["worker", "--server", self.address, "--id", f"w{i}",
                         *self.worker_args], f"worker{i}", worker_env)

    def file(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, data):
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(self.file(name), mode) as f:
            f.write(data)
        return self.file(name)

    def _start(self, args, name, env=None):
        p = Process(args, self.file(name), env)
        self.processes.append(p)
        return p

    def cli(self, *args, timeout=120):
        """Runs `fusetune ARGS --server ADDRESS` to completion."""
        return subprocess.run([BINARY, *args, "--server", self.address], capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def cli_json(self, *args, exit_code=0):
        r = self.cli(*args, "--json")
        assert r.returncode == exit_code, r.stderr
        return json.loads(r.stdout)

    def logs(self):
        return "\n".join(f"--- {os.path.basename(p.err_path)}\n{p.err()}" for p in self.processes)

    def stop(self):
        for p in reversed(self.processes):
            p.stop()


@pytest.fixture(scope="session")
def binary():
    if not os.access(BINARY, os.X_OK):
        pytest.fail(f"{BINARY} is not built: build the checkout first (scripts/setup.sh), or set "
                    "FUSETUNE_BINARY")
    return BINARY


def start_farm(tmp_path_factory, name, **kwargs):
    return Farm(tmp_path_factory.mktemp(name), **kwargs)
