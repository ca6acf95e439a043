"""Test-wide settings: hypothesis keeps its files (example database, caches)
in the system's temporary folder, not in the folder the tests run from, so a
test run leaves the checkout as it found it, wherever it is started."""
from __future__ import annotations

import os
import tempfile

from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase

HYPOTHESIS_HOME = os.path.join(tempfile.gettempdir(), "hamisim-hypothesis")

set_hypothesis_home_dir(HYPOTHESIS_HOME)
settings.register_profile(
    "hamisim", database=DirectoryBasedExampleDatabase(os.path.join(HYPOTHESIS_HOME, "examples")))
settings.load_profile("hamisim")
