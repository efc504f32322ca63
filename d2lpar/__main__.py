"""Allow ``python -m d2lpar``."""

import sys

from .cli import main

sys.exit(main())
