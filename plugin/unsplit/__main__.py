"""`python3 -m unsplit …` runs the command line."""

import gc
import sys


def _main() -> int:
    gc.disable()  # the command line's imports make thousands of objects, none in a cycle
    try:
        from unsplit.cli import main
    finally:
        gc.enable()
    return main()


sys.exit(_main())
