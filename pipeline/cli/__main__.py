"""`python -m pipeline.cli <command>`: pipeline.cli.main."""

import sys

from pipeline.cli import main

sys.exit(main())
