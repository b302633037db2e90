"""`pip install ./sdk/python` works offline (no build dependencies to download) and gives relay_client."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest

SDK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class InstallTest(unittest.TestCase):
    def test_pip_install_offline_into_a_fresh_venv(self):
        with tempfile.TemporaryDirectory(prefix="relay-sdk-venv-") as tmp:
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            py = os.path.join(venv, "bin", "python")
            # --no-index: prove nothing is fetched; the in-tree backend needs only the stdlib.
            r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--disable-pip-version-check", SDK],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = subprocess.run([py, "-c", "import relay_client, sys; print(relay_client.__version__, relay_client.__file__)"],
                               capture_output=True, text=True, cwd=tmp, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            version, path = r.stdout.split()
            self.assertEqual(version, "0.1.0")
            self.assertIn("site-packages", path)  # the installed copy, not the source tree
            r = subprocess.run([py, "-m", "pip", "show", "relay-client"], capture_output=True, text=True, timeout=60)
            self.assertIn("Requires: \n", r.stdout + "\n")  # no dependencies


if __name__ == "__main__":
    unittest.main()
