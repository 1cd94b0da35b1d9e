"""`python -m phalanx` runs the command line."""

import sys

from phalanx.cli import main

sys.exit(main())
