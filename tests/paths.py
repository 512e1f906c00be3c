"""Where the repository is, for tests that run its scripts or read its files."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
