#!/usr/bin/python3
"""The OpenMP waiting default of coli, colibri and bench_kernels (engine/startup/omp_defaults.h).

Usage: test_omp_defaults.py --program PATH ARG... [--app PATH ARG...] [unittest args]

Each program is run with OMP_DISPLAY_ENV=verbose, which makes libgomp print the settings it
really uses when it starts (OMP_WAIT_POLICY, GOMP_SPINCOUNT). Without the user's OMP_WAIT_POLICY
or GOMP_SPINCOUNT, a --program (coli, bench_kernels: the Adaptive mode) must wait passively (spin
count 0) when other programs are running and keep libgomp's spinning default on idle cores; an
--app (colibri) must always wait passively. A value the user sets must be used as given.
"""

import os
import re
import subprocess
import sys
import time
import unittest

PROGRAMS = []  # [[path, arg...]]: the Adaptive mode
APPS = []  # [[path, arg...]]: always passive
LIBGOMP_DEFAULT_SPIN = 300000  # libgomp's own default when nothing is set


def effective(cmd, **env_over):
    """libgomp's (policy, spin count) in the process that ran to the end, from OMP_DISPLAY_ENV."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "COLI_OMP_DEFAULTS_APPLIED",
                        "COLI_OMP_LOAD", "VALGRIND_LAUNCHER")}
    env.update(env_over)
    env["OMP_DISPLAY_ENV"] = "verbose"
    env["QT_QPA_PLATFORM"] = "offscreen"
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, (cmd, r.returncode, r.stderr[-2000:])
    # A re-executed program prints the block twice; the last one is the program that ran.
    policies = re.findall(r"OMP_WAIT_POLICY = '(\w+)'", r.stderr)
    spins = re.findall(r"GOMP_SPINCOUNT = '(\d+)'", r.stderr)
    assert policies and spins, f"no OMP_DISPLAY_ENV output from {cmd}: {r.stderr[-2000:]!r}"
    return policies[-1], int(spins[-1]), r.stdout


class CpuHogs:
    """Two busy loops, one per core of a 2-core machine: always runnable while they live."""

    def __enter__(self):
        self.procs = [subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
                      for _ in range(max(2, os.cpu_count() or 2))]
        time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


class OmpDefaults(unittest.TestCase):
    def test_busy_machine_gives_passive(self):
        for cmd in PROGRAMS:
            with self.subTest(cmd[0]):
                self.assertEqual(effective(cmd, COLI_OMP_LOAD="busy")[:2], ("PASSIVE", 0))

    def test_idle_machine_keeps_spinning(self):
        for cmd in PROGRAMS:
            with self.subTest(cmd[0]):
                policy, spin, _ = effective(cmd, COLI_OMP_LOAD="idle")
                self.assertEqual(spin, LIBGOMP_DEFAULT_SPIN)

    def test_measured_load_gives_passive(self):
        # No override: the program counts the runnable tasks itself.
        with CpuHogs():
            for cmd in PROGRAMS:
                with self.subTest(cmd[0]):
                    self.assertEqual(effective(cmd)[:2], ("PASSIVE", 0))

    def test_app_is_always_passive(self):
        for cmd in APPS:
            for load in ("idle", "busy"):
                with self.subTest(cmd[0], load=load):
                    self.assertEqual(effective(cmd, COLI_OMP_LOAD=load)[:2], ("PASSIVE", 0))

    def test_user_wait_policy_wins(self):
        for cmd in PROGRAMS + APPS:
            with self.subTest(cmd[0]):
                policy, spin, _ = effective(cmd, OMP_WAIT_POLICY="active")
                self.assertEqual(policy, "ACTIVE")
                self.assertGreater(spin, LIBGOMP_DEFAULT_SPIN)

    def test_user_spin_count_wins(self):
        for cmd in PROGRAMS + APPS:
            with self.subTest(cmd[0]):
                _, spin, _ = effective(cmd, GOMP_SPINCOUNT="12345")
                self.assertEqual(spin, 12345)

    def test_not_under_valgrind(self):
        # valgrind sets VALGRIND_LAUNCHER; a re-executed program would run outside the tool.
        for cmd in PROGRAMS + APPS:
            with self.subTest(cmd[0]):
                _, spin, _ = effective(cmd, VALGRIND_LAUNCHER="/usr/bin/valgrind",
                                       COLI_OMP_LOAD="busy")
                self.assertEqual(spin, LIBGOMP_DEFAULT_SPIN)

    def test_output_unchanged(self):
        # The re-executed program still gets its arguments: same stdout as with the policy given.
        for cmd in PROGRAMS + APPS:
            with self.subTest(cmd[0]):
                _, _, out_default = effective(cmd, COLI_OMP_LOAD="busy")
                _, _, out_given = effective(cmd, OMP_WAIT_POLICY="passive")
                self.assertEqual(out_default, out_given)
                self.assertTrue(out_default)


if __name__ == "__main__":
    argv = sys.argv[1:]
    rest = []
    while argv:
        if argv[0] in ("--program", "--app"):
            target = PROGRAMS if argv[0] == "--program" else APPS
            cmd = [argv[1]]
            argv = argv[2:]
            while argv and argv[0] not in ("--program", "--app", "--"):
                cmd.append(argv.pop(0))
            target.append(cmd)
        elif argv[0] == "--":
            rest, argv = argv[1:], []
        else:
            rest.append(argv.pop(0))
    if not PROGRAMS:
        sys.exit("usage: test_omp_defaults.py --program PATH ARG... [--program ...] [-- unittest args]")
    unittest.main(argv=[sys.argv[0]] + rest)
