"""``python -m gpusched``: the gpusched command line."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while Python imports: one line, no traceback
    print("gpusched: interrupted; nothing was written", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
