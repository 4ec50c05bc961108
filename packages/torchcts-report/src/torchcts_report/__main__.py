"""``python -m torchcts_report`` is the same as ``torchcts-report``."""

import sys

from torchcts_report.cli import main

sys.exit(main())
