"""Applies to every test and docstring example: the user's own data directory is never used.

The embedded default store lives in the user data directory; examples that open it get a
throwaway one instead (``XDG_DATA_HOME`` is what the data directory is derived from on
Linux), shared by subprocesses the tests start.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_data_home = tempfile.mkdtemp(prefix="langmem-tiers-tests-")
os.environ["XDG_DATA_HOME"] = _data_home
atexit.register(shutil.rmtree, _data_home, ignore_errors=True)
