"""Test-wide settings: hypothesis keeps its example database outside the source
tree (in the system's temporary folder), so a test run leaves the checkout as
it found it, whatever folder it is started from."""
from __future__ import annotations

import os
import tempfile

from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

HYPOTHESIS_DB = os.path.join(tempfile.gettempdir(), "hamisim-hypothesis-db")

settings.register_profile("hamisim", database=DirectoryBasedExampleDatabase(HYPOTHESIS_DB))
settings.load_profile("hamisim")
