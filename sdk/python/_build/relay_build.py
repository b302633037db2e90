"""Minimal in-tree PEP 517/660 build backend for relay_client.

Why: `pip install ./sdk/python` must work without network access, and pip's
isolated build would otherwise have to download setuptools. This backend has
no requirements: it writes the wheel with the standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "relay_client"
DIST = "relay-client"
VERSION = "0.1.0"
SUMMARY = "Python client for the relay memory daemon (stdlib only)"
REQUIRES_PYTHON = ">=3.8"

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TAG = "py3-none-any"


def _metadata() -> str:
    readme = ""
    path = os.path.join(_ROOT, "README.md")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            readme = f.read()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {DIST}",
        f"Version: {VERSION}",
        f"Summary: {SUMMARY}",
        "License: MIT",
        f"Requires-Python: {REQUIRES_PYTHON}",
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ]
    return "\n".join(lines)


def _wheel_file() -> str:
    return (
        "Wheel-Version: 1.0\n"
        "Generator: relay_build\n"
        "Root-Is-Purelib: true\n"
        f"Tag: {_TAG}\n"
    )


def _package_files():
    pkg = os.path.join(_ROOT, NAME)
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, fn)
            yield full, os.path.relpath(full, _ROOT).replace(os.sep, "/")


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{arcname},sha256={digest.decode()},{len(data)}"


def _write_wheel(wheel_directory: str, files) -> str:
    distinfo = f"{NAME}-{VERSION}.dist-info"
    filename = f"{NAME}-{VERSION}-{_TAG}.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files:
            zf.writestr(arcname, data)
            record.append(_record_line(arcname, data))
        for arcname, text in (
            (f"{distinfo}/METADATA", _metadata()),
            (f"{distinfo}/WHEEL", _wheel_file()),
        ):
            data = text.encode("utf-8")
            zf.writestr(arcname, data)
            record.append(_record_line(arcname, data))
        record.append(f"{distinfo}/RECORD,,")
        zf.writestr(f"{distinfo}/RECORD", "\n".join(record) + "\n")
    return filename


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    distinfo = f"{NAME}-{VERSION}.dist-info"
    os.makedirs(os.path.join(metadata_directory, distinfo), exist_ok=True)
    with open(os.path.join(metadata_directory, distinfo, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(metadata_directory, distinfo, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    return distinfo


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for full, arc in _package_files():
        with open(full, "rb") as f:
            files.append((arc, f.read()))
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts the source tree on sys.path (PEP 660's simplest form).
    return _write_wheel(wheel_directory, [(f"__editable__.{NAME}.pth", (_ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{DIST.replace('-', '_')}-{VERSION}"
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tf:
        for rel in ("pyproject.toml", "README.md", "_build/relay_build.py"):
            full = os.path.join(_ROOT, rel)
            if os.path.exists(full):
                tf.add(full, arcname=f"{base}/{rel}")
        for full, arc in _package_files():
            tf.add(full, arcname=f"{base}/{arc}")
        pkginfo = _metadata().encode("utf-8")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkginfo)
        tf.addfile(info, io.BytesIO(pkginfo))
    return filename
