"""`python3 -m unsplit …` runs the command line."""

import sys

from unsplit.cli import main

sys.exit(main())
