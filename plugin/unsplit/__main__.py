"""`python3 -m unsplit …` runs the command line."""

import sys

from unsplit.collector import collector_paused


def _main() -> int:
    with collector_paused():  # the imports make thousands of objects, none in a cycle
        from unsplit.cli import main
    return main()


sys.exit(_main())
