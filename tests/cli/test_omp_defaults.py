#!/usr/bin/python3
"""The OpenMP waiting default of coli, colibri and bench_kernels (engine/startup/omp_defaults.h).

Usage: test_omp_defaults.py --program PATH ARG... [--program PATH ARG...] [unittest args]

Each program is run with OMP_DISPLAY_ENV=verbose, which makes libgomp print the settings it
really uses when it starts (OMP_WAIT_POLICY, GOMP_SPINCOUNT). Without the user's OMP_WAIT_POLICY
or GOMP_SPINCOUNT the program must run with the passive policy (spin count 0); a value the user
sets must be used as given.
"""

import os
import re
import subprocess
import sys
import unittest

PROGRAMS = []  # [[path, arg...]]
LIBGOMP_DEFAULT_SPIN = 300000  # libgomp's own default when nothing is set


def effective(cmd, **env_over):
    """libgomp's (policy, spin count) in the process that ran to the end, from OMP_DISPLAY_ENV."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "COLI_OMP_DEFAULTS_APPLIED",
                        "VALGRIND_LAUNCHER")}
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


class OmpDefaults(unittest.TestCase):
    def test_default_is_passive(self):
        for cmd in PROGRAMS:
            with self.subTest(cmd[0]):
                policy, spin, _ = effective(cmd)
                self.assertEqual((policy, spin), ("PASSIVE", 0))

    def test_user_wait_policy_wins(self):
        for cmd in PROGRAMS:
            with self.subTest(cmd[0]):
                policy, spin, _ = effective(cmd, OMP_WAIT_POLICY="active")
                self.assertEqual(policy, "ACTIVE")
                self.assertGreater(spin, LIBGOMP_DEFAULT_SPIN)

    def test_user_spin_count_wins(self):
        for cmd in PROGRAMS:
            with self.subTest(cmd[0]):
                _, spin, _ = effective(cmd, GOMP_SPINCOUNT="12345")
                self.assertEqual(spin, 12345)

    def test_not_under_valgrind(self):
        # valgrind sets VALGRIND_LAUNCHER; a re-executed program would run outside the tool.
        for cmd in PROGRAMS:
            with self.subTest(cmd[0]):
                _, spin, _ = effective(cmd, VALGRIND_LAUNCHER="/usr/bin/valgrind")
                self.assertEqual(spin, LIBGOMP_DEFAULT_SPIN)

    def test_output_unchanged(self):
        # The re-executed program still gets its arguments: same stdout as with the policy given.
        for cmd in PROGRAMS:
            with self.subTest(cmd[0]):
                _, _, out_default = effective(cmd)
                _, _, out_given = effective(cmd, OMP_WAIT_POLICY="passive")
                self.assertEqual(out_default, out_given)
                self.assertTrue(out_default)


if __name__ == "__main__":
    argv = sys.argv[1:]
    rest = []
    while argv:
        if argv[0] == "--program":
            cmd = [argv[1]]
            argv = argv[2:]
            while argv and argv[0] != "--program" and argv[0] != "--":
                cmd.append(argv.pop(0))
            PROGRAMS.append(cmd)
        elif argv[0] == "--":
            rest, argv = argv[1:], []
        else:
            rest.append(argv.pop(0))
    if not PROGRAMS:
        sys.exit("usage: test_omp_defaults.py --program PATH ARG... [--program ...] [-- unittest args]")
    unittest.main(argv=[sys.argv[0]] + rest)
