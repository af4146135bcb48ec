#!/usr/bin/python3
"""CPU and wall time of starting `fusetune`: `--version`, `check` of GRAPH, a `query` of a tuned
store, and `sandbox-child` with no jobs: what a tune pays to start its sandbox child, which is
BINARY-codegen when that exists (the code generator `fusetune` starts, worker/codegen_binary.h).

    bench/startup/start_cost.py RUNS DB GRAPH DIMS BINARY...
    bench/startup/start_cost.py 30 /tmp/tr.db examples/bmm_where_dyn.relay x.1,y.1=192 \\
        /tmp/fusetune_base build/fusetune

Each command is forked RUNS times, the binaries interleaved so that a change of machine load
hits all alike; CPU is the child's user + system time (rusage). Prints min and median per binary
and command. Every run must exit 0 (a query must find a plan, exact or transferred).
"""
import os
import statistics
import sys
import time


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    runs, db, graph, dims = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    binaries = sys.argv[5:]
    commands = {"--version": ["--version"],
                "check": ["check", graph],
                "query": ["query", "--db", db, graph, "--dim", dims],
                "sandbox": ["sandbox-child"]}
    devnull = os.open(os.devnull, os.O_WRONLY)
    no_input = os.open(os.devnull, os.O_RDONLY)
    results = {(b, c): ([], []) for b in binaries for c in commands}
    for _ in range(runs):
        for binary in binaries:
            for name, args in commands.items():
                start = time.perf_counter()
                pid = os.fork()
                if pid == 0:
                    os.dup2(no_input, 0)  # sandbox-child: no jobs, it exits at once
                    os.dup2(devnull, 1)
                    os.dup2(devnull, 2)
                    run = binary
                    if name == "sandbox" and os.path.exists(binary + "-codegen"):
                        run = binary + "-codegen"
                    os.execv(run, [run] + args)
                _, status, usage = os.wait4(pid, 0)
                wall = (time.perf_counter() - start) * 1e3
                if os.waitstatus_to_exitcode(status) != 0:
                    sys.exit(f"{binary} {' '.join(args)} failed")
                results[(binary, name)][0].append(wall)
                results[(binary, name)][1].append((usage.ru_utime + usage.ru_stime) * 1e3)
    print(f"{'binary':30s} {'command':10s} {'wall min':>9s} {'median':>7s} {'cpu min':>8s} {'median':>7s}")
    for (binary, name), (wall, cpu) in results.items():
        print(f"{binary:30s} {name:10s} {min(wall):9.1f} {statistics.median(wall):7.1f} "
              f"{min(cpu):8.1f} {statistics.median(cpu):7.1f}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
