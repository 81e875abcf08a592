"""Deprecated: the name of `rmm_core.adapter_guard` before 0.2, kept for one release."""

import warnings

from .adapter_guard import *  # noqa: F403
from .adapter_guard import aguarded, check_arguments, check_speakers, guarded  # noqa: F401

warnings.warn("rmm_core.policy is now rmm_core.adapter_guard; the old name goes in the next "
              "release", DeprecationWarning, stacklevel=2)
