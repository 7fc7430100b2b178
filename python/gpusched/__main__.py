"""``python -m gpusched``: the gpusched command line."""

import sys

from .cli import main

sys.exit(main())
