"""``python -m ssmkit ...``: the command line of ``ssmkit.cli``."""
import sys

from ssmkit.cli import main

sys.exit(main())
